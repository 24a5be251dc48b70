"""Recipient preferences over the real adapters (moto in-process): what SES receives for mail a
recipient may refuse (List-Unsubscribe, List-Unsubscribe-Post, the footer link), and a recipient
who unsubscribed journaled log-only with SES called zero times, while critical mail of the same
category still goes out."""

from __future__ import annotations

import email
from email.policy import default

import pytest

from emailops import container
from emailops.core.contract import parse_request
from emailops.core.dedupe import dedupe_key
from emailops.core.pipeline import Action, EmailPipeline, PipelineSettings
from emailops.core.ports import TemplateMapping
from emailops.core.preferences import HowChanged, Preference
from emailops.pipeline_build import send_policies
from tests.core.test_pipeline import request_body
from tests.fakes import RecordingOutbox

NOW = 1_796_220_000  # 2026-12-02T14:00:00Z
URL = "https://email.example.org/unsubscribe/s1gned?c=dataset-activity&o=367"
BODY = request_body(
    "dataset-activity",
    recipients=[{"name": "Alice Example", "email": "alice@example.com"}],
    datasetName="My Dataset",
)


class FakeLinks:
    def url(self, *, address, category, organization):
        return URL if (address, category) == ("alice@example.com", "dataset-activity") else None


def save(message_id: str, priority: str) -> None:
    container.current().mapping_store.save_mapping(
        TemplateMapping(
            message_id,
            "dataset-activity.html",
            "New activity on {{.datasetName}}",
            priority=priority,
            category="dataset-activity",
        ),
        expected_version=None,
    )


@pytest.fixture
def pipeline(aws) -> EmailPipeline:
    built = container.current()
    save("dataset-activity", "normal")
    save("dataset-activity-critical", "critical")
    built.template_store.write_template(
        "default/dataset-activity.html",
        "<p>Activity on <b>{{.datasetName}}</b>.</p>"
        '{{ if .unsubscribeUrl }}<p><a href="{{.unsubscribeUrl}}">Unsubscribe</a></p>{{ end }}',
    )
    return EmailPipeline(
        composer=built.composer(),
        journal=built.journal,
        sender=built.sender,
        policies=send_policies(preferences=built.cached_preference_store),
        unsubscribe_links=FakeLinks(),
        settings=PipelineSettings(
            from_address="Pennsieve <support@pennsieve.test>",
            reply_to=("support@pennsieve.test",),
            lease_seconds=30,
        ),
        clock=lambda: NOW,
        outbox=RecordingOutbox(),
    )


def test_categorised_mail_reaches_ses_with_the_one_click_headers_and_the_footer_link(aws, pipeline):
    outcome = pipeline.process(BODY, record_id="sqs-1")

    assert (outcome.action, outcome.sent) == (Action.DELETE, 1)
    [sent] = aws.sent_emails()
    message = email.message_from_bytes(sent.raw_data.encode(), policy=default)
    assert message["List-Unsubscribe"] == f"<{URL}>"
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert message["To"] == "Alice Example <alice@example.com>"
    assert message["Subject"] == "New activity on My Dataset"
    text, html = message.iter_parts()
    assert (
        text.get_content_type() == "text/plain" and "Activity on My Dataset" in text.get_content()
    )
    assert URL in text.get_content()
    assert html.get_content_type() == "text/html"
    assert f'<a href="{URL.replace("&", "&amp;")}">Unsubscribe</a>' in html.get_content()
    row = container.current().journal.get(dedupe_key(parse_request(BODY), "alice@example.com"))
    assert row["Status"] == "SENT" and row["SesMessageId"] == sent.id


def test_an_unsubscribed_recipient_is_journaled_log_only_and_ses_is_called_zero_times(
    aws, pipeline
):
    container.current().preference_store.set(
        Preference(
            "Alice@Example.com",
            "dataset-activity",
            False,
            HowChanged.ONE_CLICK,
            NOW - 3600,
            "Dataset activity",
        )
    )
    calls: list[str] = []
    hook = lambda **kw: calls.append(kw["event_name"])  # noqa: E731
    pipeline.sender.client.meta.events.register("before-call.ses.*", hook)
    try:
        outcome = pipeline.process(BODY, record_id="sqs-1")
        assert calls == [] and aws.sent_emails() == []

        critical = BODY.replace('"dataset-activity"', '"dataset-activity-critical"', 1)
        assert pipeline.process(critical, record_id="sqs-2").sent == 1
    finally:
        pipeline.sender.client.meta.events.unregister("before-call.ses.*", hook)

    assert outcome.action is Action.DELETE
    row = container.current().journal.get(dedupe_key(parse_request(BODY), "alice@example.com"))
    assert row["Status"] == "SENT" and row["LoggedOnly"] is True and "SesMessageId" not in row
    assert row["LoggedOnlyReason"] == "unsubscribed"
    assert row["LoggedOnlyDetail"] == (
        "unsubscribed from Dataset activity on 2026-12-02 (one-click)"
    )
    assert [(e.type, e.facts.get("reason")) for e in pipeline.outbox.events] == [
        ("email.not_delivered", "unsubscribed"),
        ("email.sent", None),  # the critical one
    ]

    assert calls == ["before-call.ses.SendEmail"]  # the critical one alone
    [sent] = aws.sent_emails()
    assert sent.destinations["ToAddresses"] == ["Alice Example <alice@example.com>"]
    assert "Unsubscribe" not in sent.body  # critical mail: no link, no header (plain SendEmail)
