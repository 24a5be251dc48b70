"""End to end: moto in server mode, the real `manage.py consume_emails --until-empty` process.

One queue load covers the contract fixtures and the failure modes; the assertions then read what SES
accepted (moto's model API) and what the journal says. The stack is the ``e2e_stack`` fixture
(tests/conftest.py, tests/support/stack.py).
"""

from __future__ import annotations

import json
import time

import pytest

from emailops.core.contract import parse_request
from emailops.core.dedupe import dedupe_key
from tests.conftest import CONTRACT, fixture_body
from tests.support.stack import wait_until

pytestmark = pytest.mark.e2e


def key_for(body: str | dict, email: str) -> str:
    return dedupe_key(parse_request(body if isinstance(body, str) else json.dumps(body)), email)


@pytest.fixture(scope="module")
def consumed(e2e_stack):
    """Load the queue with every case at once (one batch proves records are isolated), consume."""
    now = int(time.time())
    failed_before = {
        "messageId": "added-to-team",
        "dedupeId": "retry-1",
        "recipients": [{"email": "retry@example.com"}],
        "context": {"teamName": "Ops"},
    }
    e2e_stack.put_row(
        Id="retry-1:retry@example.com",
        MessageId="added-to-team",
        Recipient="retry@example.com",
        Status="FAILED",
        Timestamp=now - 600,
        SentAtKey=f"{now - 600:020d}",
        Error="Throttling: rate exceeded",
        Attempts=1,
    )
    crashed = {
        "messageId": "added-to-team",
        "dedupeId": "crash-1",
        "recipients": [{"email": "crash@example.com"}],
        "context": {"teamName": "Ops"},
    }
    # A claim by the Go consumer that died mid-send: no ClaimExpiresAt, Timestamp long ago.
    e2e_stack.put_row(
        Id="crash-1:crash@example.com",
        MessageId="added-to-team",
        Recipient="crash@example.com",
        Status="QUEUED",
        Timestamp=now - 3600,
        SentAtKey=f"{now - 3600:020d}",
    )
    busy = {
        "messageId": "added-to-team",
        "dedupeId": "busy-1",
        "recipients": [{"email": "busy@example.com"}],
        "context": {"teamName": "Ops"},
    }
    e2e_stack.put_row(
        Id="busy-1:busy@example.com",
        MessageId="added-to-team",
        Recipient="busy@example.com",
        Status="QUEUED",
        Timestamp=now,
        SentAtKey=f"{now:020d}",
        ClaimExpiresAt=now + 600,
        Attempts=1,
    )
    cases = {
        "fixtures": [fixture_body(p.name) for p in sorted((CONTRACT / "fixtures").glob("*.json"))],
        "duplicate": [fixture_body("minimal.json")],
        "override": [
            {
                "messageId": "added-to-team",
                "recipients": [{"email": "subj@example.com"}],
                "context": {
                    "teamName": "R&D",
                    "subject": "Welcome to {{.teamName}}, {{ who }}",
                    "who": "Ann",
                },
            }
        ],
        "escaping": [
            {
                "messageId": "added-to-team",
                "recipients": [{"email": "xss@example.com"}],
                "context": {
                    "teamName": "<script>alert(1)</script>",
                    "administrator": "Tom & Jerry",
                    "host": "h",
                    "organizationNodeId": "N:o",
                },
            }
        ],
        "fallback": [
            {
                "messageId": "dataset-publication-accepted",
                "recipients": [{"email": "org999@example.com"}],
                "context": {
                    "organizationId": "999",
                    "datasetName": "D",
                    "reviewerName": "R",
                    "date": "2026-01-01",
                },
            }
        ],
        "retry": [failed_before],
        "crashed": [crashed],
        "busy": [busy],
        "malformed": [
            "{not json",
            {"messageId": "no-such-email", "recipients": [{"email": "u@example.com"}]},
            {"messageId": "added-to-team", "recipients": [{"email": "not-an-address"}]},
        ],
    }
    e2e_stack.enqueue([body for bodies in cases.values() for body in bodies])
    result = e2e_stack.consume()
    return {"cases": cases, "output": result.stdout + result.stderr}


def test_every_contract_fixture_is_sent_with_its_reference_key(
    e2e_stack, consumed, dedupe_reference
):
    for name in (
        "minimal.json",
        "multi-recipient.json",
        "with-dedupe-id.json",
        "with-organization.json",
    ):
        for email, key in dedupe_reference[name].items():
            row = e2e_stack.row(key)
            assert row["Status"] == "SENT", (name, row)
            assert row["Recipient"] == email and row["SentAtKey"] == f"{int(row['Timestamp']):020d}"
            assert row["SesMessageId"] and row["MessageSent"].endswith("Z")
    assert (
        len(e2e_stack.sent_to("rev1@example.com")) == 1
        and len(e2e_stack.sent_to("rev2@example.com")) == 1
    )
    carol = e2e_stack.sent_to("carol@example.com")
    assert carol[0].source == "Pennsieve <support@pennsieve.test>"
    assert "Imaging" in carol[0].subject


def test_duplicate_delivery_is_not_sent_twice(e2e_stack, consumed, dedupe_reference):
    minimal_key = dedupe_reference["minimal.json"]["alice@example.com"]
    alice = e2e_stack.sent_to("alice@example.com")
    # minimal.json was enqueued twice; with-organization.json is a different request (other key).
    assert len(alice) == 2
    assert minimal_key != dedupe_reference["with-organization.json"]["alice@example.com"]


def test_org_branding_and_fallback(e2e_stack, consumed, dedupe_reference):
    branded = e2e_stack.row(dedupe_reference["with-organization.json"]["alice@example.com"])
    assert branded["TemplateKey"] == "custom/O367/dataset-publication-accepted.html"
    plain = e2e_stack.row(dedupe_reference["minimal.json"]["alice@example.com"])
    assert plain["TemplateKey"] == "default/dataset-publication-accepted.html"
    fallback = consumed["cases"]["fallback"][0]
    assert e2e_stack.row(key_for(fallback, "org999@example.com"))["TemplateKey"].startswith(
        "default/"
    )
    bodies = [m.body for m in e2e_stack.sent_to("alice@example.com")]
    assert any("SPARC Portal" in b for b in bodies) and any("Pennsieve" in b for b in bodies)


def test_subject_override_and_go_syntax_subject(e2e_stack, consumed):
    (message,) = e2e_stack.sent_to("subj@example.com")
    assert message.subject == "Welcome to R&D, Ann"  # plain text: & stays &
    (carol,) = e2e_stack.sent_to("carol@example.com")
    assert carol.subject == "You were added to the team Imaging"  # {{.teamName}} in the mapping


def test_context_is_html_escaped_in_the_body(e2e_stack, consumed):
    (message,) = e2e_stack.sent_to("xss@example.com")
    assert "<script>" not in message.body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in message.body
    assert "Tom &amp; Jerry" in message.body


def test_failed_row_is_retried_to_sent_exactly_once(e2e_stack, consumed):
    assert len(e2e_stack.sent_to("retry@example.com")) == 1
    row = e2e_stack.row("retry-1:retry@example.com")
    assert row["Status"] == "SENT" and row["Attempts"] == "2" and "Error" not in row


def test_crashed_claim_with_expired_lease_is_sent_exactly_once(e2e_stack, consumed):
    assert len(e2e_stack.sent_to("crash@example.com")) == 1
    assert e2e_stack.row("crash-1:crash@example.com")["Status"] == "SENT"


def test_live_claim_is_left_to_its_owner(e2e_stack, consumed):
    assert e2e_stack.sent_to("busy@example.com") == []
    assert e2e_stack.row("busy-1:busy@example.com")["Status"] == "QUEUED"
    attributes = e2e_stack.sqs.get_queue_attributes(
        QueueUrl=e2e_stack.queue_url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
    )
    assert int(attributes["Attributes"]["ApproximateNumberOfMessagesNotVisible"]) >= 1


def test_bad_records_go_to_the_dead_letter_queue_with_a_reason(e2e_stack, consumed):
    reasons = {
        m["Body"]: m["MessageAttributes"]["FailureReason"]["StringValue"]
        for m in e2e_stack.dead_letters()
    }
    assert "body is not JSON" in reasons["{not json"]
    unknown = next(r for b, r in reasons.items() if "no-such-email" in b)
    assert "no such messageId" in unknown
    bad_address = next(r for b, r in reasons.items() if "not-an-address" in b)
    assert "recipients[0].email" in bad_address
    # The unknown messageId had a known recipient: it left a FAILED row saying why.
    row = e2e_stack.row(key_for(consumed["cases"]["malformed"][1], "u@example.com"))
    assert row["Status"] == "FAILED" and "no such messageId" in row["Error"]


def test_each_outcome_is_logged_as_one_structured_line(consumed):
    lines = [line for line in consumed["output"].splitlines() if "event=record.done" in line]
    assert len(lines) == sum(len(v) for v in consumed["cases"].values())
    assert all("sqsMessageId=" in line and "outcome=" in line for line in lines)
    sent = [line for line in consumed["output"].splitlines() if "event=recipient.sent" in line]
    assert all(f" {field}=" in line for line in sent for field in ("messageId", "recipient", "key"))


def test_a_second_run_sends_nothing_new(e2e_stack, consumed):
    before = len(e2e_stack.sent_emails())
    e2e_stack.enqueue(
        [fixture_body("multi-recipient.json")]
    )  # redelivery of an already-sent request
    e2e_stack.consume()
    assert len(e2e_stack.sent_emails()) == before


def test_sigterm_stops_the_consumer_cleanly(e2e_stack):
    process = e2e_stack.start_consumer("sigterm", ["--wait-time", "1"])
    try:
        # until the consumer has started polling
        wait_until(
            lambda: "event=consumer.configured" in process.output() or not process.alive(),
            timeout=60,
        )
        process.terminate(timeout=30)
        err, out = process.log_path.read_text(), process.stdout()
    finally:
        process.cleanup()
    assert process.process.returncode == 0, err
    assert "finishing in-flight records" in err
    assert out.startswith("received=")
