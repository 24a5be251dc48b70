"""The core pipeline over the real adapters (moto in-process): one happy record, its duplicate, a
record the journal must remember as FAILED, and control characters that must never reach SES's
headers."""

from __future__ import annotations

import email
import json
from email.message import Message

import pytest

from emailops import container
from emailops.core.contract import parse_request
from emailops.core.dedupe import dedupe_key
from emailops.core.header_text import control_character
from emailops.core.pipeline import Action, EmailPipeline, PipelineSettings
from emailops.core.ports import TemplateMapping
from emailops.pipeline_build import send_policies
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
        policies=send_policies(),
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


# --- control characters: what SES would write into the headers --------------------------------

# Line breaks to str.splitlines and the parsers built on it (VT, FF, FS, NEL, U+2028), and NUL.
CONTROLS = ["\x0b", "\x0c", "\x00", "\x1c", "\x85", "\u2028"]


def as_received(sent) -> Message:
    """The message SES builds from what moto's SES stored of a SendEmail call (From, To and
    Subject as given, then the body), read back by the standard library's parser as a receiving
    mail client would read it."""
    head = [
        f"From: {sent.source}",
        "To: " + ", ".join(sent.destinations["ToAddresses"]),
        f"Subject: {sent.subject}",
    ]
    return email.message_from_string("\r\n".join(head) + "\r\n\r\n" + sent.body)


def request_body(recipients: list[dict], **context) -> str:
    return json.dumps(
        {
            "messageId": "dataset-publication-accepted",
            "recipients": recipients,
            "context": {"datasetName": "My Dataset", "reviewerName": "Bob", **context},
        }
    )


@pytest.mark.parametrize("control", CONTROLS)
def test_a_control_character_in_a_name_never_reaches_ses(aws, pipeline, control):
    """The finding: CR/LF were refused, but `"Carol\\x0bBcc: evil@…"` went out as written. The
    bad recipient is refused with a FAILED row naming the field; the good one still goes."""
    body = request_body(
        [
            {"email": "alice@example.com", "name": "Alice"},
            {"email": "carol@example.com", "name": f"Carol{control}Bcc: evil@evil.test"},
        ]
    )
    outcome = pipeline.process(body, record_id="sqs-1")
    assert outcome.sent == 1

    [sent] = aws.sent_emails()  # Alice's alone
    received = as_received(sent)
    assert received.get_all("To") == ["Alice <alice@example.com>"]
    assert received.get_all("Bcc") is None
    assert received["Subject"] == "Dataset My Dataset accepted"
    assert not any(control_character(value) for _, value in received.items())

    row = container.current().journal.get(dedupe_key(parse_request(body), "carol@example.com"))
    assert row["Status"] == "FAILED"
    assert f"recipients[1].name: control character U+{ord(control):04X}" in row["Error"]


@pytest.mark.parametrize("control", CONTROLS)
def test_a_control_character_in_the_requests_subject_fails_the_request(aws, pipeline, control):
    body = request_body(
        [{"email": "alice@example.com", "name": "Alice"}],
        subject=f"Accepted{control}Bcc: evil@evil.test",
    )
    outcome = pipeline.process(body)
    assert outcome.action is Action.DEAD_LETTER
    assert aws.sent_emails() == []
    row = container.current().journal.get(dedupe_key(parse_request(body), "alice@example.com"))
    assert row["Status"] == "FAILED"
    assert f"context.subject: control character U+{ord(control):04X}" in row["Error"]


def test_a_control_character_in_the_mappings_rendered_subject_fails_the_request(aws, pipeline):
    """The mapping's subject is `Dataset {{.datasetName}} accepted`: the value brings the VT."""
    body = request_body([{"email": "alice@example.com"}], datasetName="My\x0bBcc: evil@evil.test")
    outcome = pipeline.process(body)
    assert outcome.action is Action.DEAD_LETTER
    assert aws.sent_emails() == []
    row = container.current().journal.get(dedupe_key(parse_request(body), "alice@example.com"))
    assert row["Status"] == "FAILED"
    assert "subject of dataset-publication-accepted" in row["Error"]
    assert "subject: control character U+000B" in row["Error"]
