"""The core pipeline over the real adapters (moto in-process): one happy record, its duplicate, and
a record the journal must remember as FAILED."""

from __future__ import annotations

import json

import pytest

from emailops import container
from emailops.core.contract import parse_request
from emailops.core.dedupe import dedupe_key
from emailops.core.pipeline import Action, EmailPipeline, PipelineSettings
from emailops.core.ports import TemplateMapping
from tests.conftest import fixture_body

NOW = 1_750_000_000


@pytest.fixture
def pipeline(aws) -> EmailPipeline:
    container.current().mapping_store.save_mapping(
        TemplateMapping(
            "dataset-publication-accepted",
            "dataset-publication-accepted.html",
            "Dataset {{.datasetName}} accepted",
        ),
        expected_version=None,
    )
    templates = container.current().template_store
    templates.write_template(
        "default/dataset-publication-accepted.html",
        "<p>{{.reviewerName}} accepted <b>{{.datasetName}}</b> on {{.date}}.</p>",
    )
    templates.write_template(
        "custom/O367/dataset-publication-accepted.html", "<p>Branded: {{.datasetName}}</p>"
    )
    return EmailPipeline(
        composer=container.current().composer(),
        journal=container.current().journal,
        sender=container.current().sender,
        settings=PipelineSettings(
            from_address="Pennsieve <support@pennsieve.test>",
            reply_to=("support@pennsieve.test",),
            lease_seconds=30,
        ),
        clock=lambda: NOW,
    )


def test_a_record_is_sent_once_and_journaled(aws, pipeline):
    body = fixture_body("minimal.json")
    outcome = pipeline.process(body, record_id="sqs-1")
    assert (outcome.action, outcome.sent) == (Action.DELETE, 1)
    [sent] = aws.sent_emails()
    assert sent.destinations["ToAddresses"] == ["Alice <alice@example.com>"]
    assert sent.subject == "Dataset My Dataset accepted"
    assert sent.body == "<p>Bob accepted <b>My Dataset</b> on 2026-06-18.</p>"

    key = dedupe_key(parse_request(body), "alice@example.com")
    assert key == "6b98984f638531accfd21f28dda2ffa53c0273b5da70eba57a30eaa90ef679da"  # Go's
    row = container.current().journal.get(key)
    assert row["Status"] == "SENT"
    assert row["SesMessageId"] == sent.id
    assert row["Context"] == json.loads(body)["context"]
    assert row["TemplateKey"] == "default/dataset-publication-accepted.html"

    again = pipeline.process(body, record_id="sqs-1-redelivered")
    assert (again.action, again.sent, again.skipped) == (Action.DELETE, 0, 1)
    assert len(aws.sent_emails()) == 1


def test_branded_record(aws, pipeline):
    outcome = pipeline.process(fixture_body("with-organization.json"))
    assert outcome.action is Action.DELETE
    assert aws.sent_emails()[0].body == "<p>Branded: My Dataset</p>"


def test_unknown_message_id_leaves_failed_rows(aws, pipeline):
    body = json.dumps(
        {
            "messageId": "no-such-message",
            "recipients": [{"email": "a@example.com"}],
            "context": {"x": 1.5},
        }
    )
    outcome = pipeline.process(body)
    assert outcome.action is Action.DEAD_LETTER
    row = container.current().journal.get(dedupe_key(parse_request(body), "a@example.com"))
    assert row["Status"] == "FAILED"
    assert "no such messageId" in row["Error"]
    assert row["Context"] == {"x": 1.5}
    assert aws.sent_emails() == []


def test_unverified_sender_waits_for_the_fix_without_failed_rows(aws, pipeline):
    pipeline.settings = PipelineSettings(from_address="nobody@elsewhere.test", lease_seconds=30)
    body = fixture_body("minimal.json")
    outcome = pipeline.process(body)
    assert outcome.action is Action.WAIT
    assert "MessageRejected" in outcome.reason and "verify the sender" in outcome.fault
    row = container.current().journal.get(dedupe_key(parse_request(body), "alice@example.com"))
    assert (row["Status"], row["ClaimExpiresAt"]) == ("QUEUED", 0)  # released, never FAILED
    # Fixed: the same record goes out.
    container.current().sender.verify_sender("nobody@elsewhere.test")
    assert pipeline.process(body).action is Action.DELETE
    assert container.current().journal.get(row["Id"])["Status"] == "SENT"
