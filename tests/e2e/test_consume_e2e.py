"""End to end: moto in server mode, the real `manage.py consume_emails --until-empty` process.

One queue load covers the contract fixtures and the failure modes; the assertions then read what SES
accepted and what the journal says. The moto server runs in this process, so its backends can be
inspected directly.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import boto3
import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.server import ThreadedMotoServer
from moto.ses.models import ses_backends

from emailops.core.contract import parse_request
from emailops.core.dedupe import dedupe_key
from tests.conftest import CONTRACT, SAMPLES, fixture_body
from tests.e2e.conftest import E2E_SEND_RATE

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
QUEUE = "email-service-queue"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def stack():
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "TEMPLATES_TABLE": "email-message-templates",
        "JOURNAL_TABLE": "email-journal",
        "S3_BUCKET": "emailops-e2e",
        "EMAIL_SENDER": "Pennsieve <support@pennsieve.test>",
        "EMAIL_REPLY_TO": "help@pennsieve.test",
        "EMAIL_SERVICE_QUEUE_URL": f"{endpoint}/{DEFAULT_ACCOUNT_ID}/{QUEUE}",
        "RETRY_BACKOFF_BASE_SECONDS": "30",
        **E2E_SEND_RATE,
    }
    env.pop("AWS_PROFILE", None)
    client = lambda name: boto3.client(  # noqa: E731
        name,
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    manage = [sys.executable, str(ROOT / "manage.py")]
    for command in (
        ["bootstrap_aws", "--visibility-timeout", "60"],
        ["load_templates", str(SAMPLES / "templates")],
        ["load_template_mappings", str(SAMPLES / "mappings.json")],
    ):
        subprocess.run([*manage, *command], env=env, check=True, capture_output=True, timeout=120)
    yield Stack(env=env, manage=manage, dynamodb=client("dynamodb"), sqs=client("sqs"))
    server.stop()


class Stack:
    def __init__(self, *, env, manage, dynamodb, sqs):
        self.env, self.manage, self.dynamodb, self.sqs = env, manage, dynamodb, sqs
        self.queue_url = env["EMAIL_SERVICE_QUEUE_URL"]
        self.dlq_url = self.queue_url + "-dlq"

    def enqueue(self, body: str | dict) -> None:
        text = body if isinstance(body, str) else json.dumps(body)
        self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=text)

    def consume(self) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [*self.manage, "consume_emails", "--until-empty", "--wait-time", "1"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert result.returncode == 0, result.stderr
        return result

    def row(self, key: str) -> dict:
        item = self.dynamodb.get_item(
            TableName="email-journal", Key={"Id": {"S": key}}, ConsistentRead=True
        ).get("Item")
        assert item, f"no journal row {key}"
        return {k: next(iter(v.values())) for k, v in item.items()}

    def put_row(self, **attributes: str | int) -> None:
        self.dynamodb.put_item(
            TableName="email-journal",
            Item={
                k: {"N": str(v)} if isinstance(v, int) else {"S": v} for k, v in attributes.items()
            },
        )

    def dead_letters(self) -> list[dict]:
        found: dict[str, dict] = {}
        for _ in range(5):  # SQS returns a sample per call; a few calls see every message
            response = self.sqs.receive_message(
                QueueUrl=self.dlq_url,
                MaxNumberOfMessages=10,
                MessageAttributeNames=["All"],
                VisibilityTimeout=0,
            )
            found.update({m["MessageId"]: m for m in response.get("Messages", [])})
        return list(found.values())


def sent_to(address: str) -> list:
    messages = ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages
    return [m for m in messages if any(address in d for d in m.destinations["ToAddresses"])]


def key_for(body: str | dict, email: str) -> str:
    return dedupe_key(parse_request(body if isinstance(body, str) else json.dumps(body)), email)


@pytest.fixture(scope="module")
def consumed(stack):
    """Load the queue with every case at once (one batch proves records are isolated), consume."""
    now = int(time.time())
    failed_before = {
        "messageId": "added-to-team",
        "dedupeId": "retry-1",
        "recipients": [{"email": "retry@example.com"}],
        "context": {"teamName": "Ops"},
    }
    stack.put_row(
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
    stack.put_row(
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
    stack.put_row(
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
    for bodies in cases.values():
        for body in bodies:
            stack.enqueue(body)
    result = stack.consume()
    return {"cases": cases, "output": result.stdout + result.stderr}


def test_every_contract_fixture_is_sent_with_its_reference_key(stack, consumed, dedupe_reference):
    for name in (
        "minimal.json",
        "multi-recipient.json",
        "with-dedupe-id.json",
        "with-organization.json",
    ):
        for email, key in dedupe_reference[name].items():
            row = stack.row(key)
            assert row["Status"] == "SENT", (name, row)
            assert row["Recipient"] == email and row["SentAtKey"] == f"{int(row['Timestamp']):020d}"
            assert row["SesMessageId"] and row["MessageSent"].endswith("Z")
    assert len(sent_to("rev1@example.com")) == 1 and len(sent_to("rev2@example.com")) == 1
    carol = sent_to("carol@example.com")
    assert carol[0].source == "Pennsieve <support@pennsieve.test>"
    assert "Imaging" in carol[0].subject


def test_duplicate_delivery_is_not_sent_twice(consumed, dedupe_reference):
    minimal_key = dedupe_reference["minimal.json"]["alice@example.com"]
    alice = sent_to("alice@example.com")
    # minimal.json was enqueued twice; with-organization.json is a different request (other key).
    assert len(alice) == 2
    assert minimal_key != dedupe_reference["with-organization.json"]["alice@example.com"]


def test_org_branding_and_fallback(stack, consumed, dedupe_reference):
    branded = stack.row(dedupe_reference["with-organization.json"]["alice@example.com"])
    assert branded["TemplateKey"] == "custom/O367/dataset-publication-accepted.html"
    plain = stack.row(dedupe_reference["minimal.json"]["alice@example.com"])
    assert plain["TemplateKey"] == "default/dataset-publication-accepted.html"
    fallback = consumed["cases"]["fallback"][0]
    assert stack.row(key_for(fallback, "org999@example.com"))["TemplateKey"].startswith("default/")
    bodies = [m.body for m in sent_to("alice@example.com")]
    assert any("SPARC Portal" in b for b in bodies) and any("Pennsieve" in b for b in bodies)


def test_subject_override_and_go_syntax_subject(consumed):
    (message,) = sent_to("subj@example.com")
    assert message.subject == "Welcome to R&D, Ann"  # plain text: & stays &
    (carol,) = sent_to("carol@example.com")
    assert carol.subject == "You were added to the team Imaging"  # {{.teamName}} in the mapping


def test_context_is_html_escaped_in_the_body(consumed):
    (message,) = sent_to("xss@example.com")
    assert "<script>" not in message.body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in message.body
    assert "Tom &amp; Jerry" in message.body


def test_failed_row_is_retried_to_sent_exactly_once(stack, consumed):
    assert len(sent_to("retry@example.com")) == 1
    row = stack.row("retry-1:retry@example.com")
    assert row["Status"] == "SENT" and row["Attempts"] == "2" and "Error" not in row


def test_crashed_claim_with_expired_lease_is_sent_exactly_once(stack, consumed):
    assert len(sent_to("crash@example.com")) == 1
    assert stack.row("crash-1:crash@example.com")["Status"] == "SENT"


def test_live_claim_is_left_to_its_owner(stack, consumed):
    assert sent_to("busy@example.com") == []
    assert stack.row("busy-1:busy@example.com")["Status"] == "QUEUED"
    attributes = stack.sqs.get_queue_attributes(
        QueueUrl=stack.queue_url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
    )
    assert int(attributes["Attributes"]["ApproximateNumberOfMessagesNotVisible"]) >= 1


def test_bad_records_go_to_the_dead_letter_queue_with_a_reason(stack, consumed):
    reasons = {
        m["Body"]: m["MessageAttributes"]["FailureReason"]["StringValue"]
        for m in stack.dead_letters()
    }
    assert "body is not JSON" in reasons["{not json"]
    unknown = next(r for b, r in reasons.items() if "no-such-email" in b)
    assert "no such messageId" in unknown
    bad_address = next(r for b, r in reasons.items() if "not-an-address" in b)
    assert "recipients[0].email" in bad_address
    # The unknown messageId had a known recipient: it left a FAILED row saying why.
    row = stack.row(key_for(consumed["cases"]["malformed"][1], "u@example.com"))
    assert row["Status"] == "FAILED" and "no such messageId" in row["Error"]


def test_each_outcome_is_logged_as_one_structured_line(consumed):
    lines = [line for line in consumed["output"].splitlines() if "event=record.done" in line]
    assert len(lines) == sum(len(v) for v in consumed["cases"].values())
    assert all("sqsMessageId=" in line and "outcome=" in line for line in lines)
    sent = [line for line in consumed["output"].splitlines() if "event=recipient.sent" in line]
    assert all(f" {field}=" in line for line in sent for field in ("messageId", "recipient", "key"))


def test_a_second_run_sends_nothing_new(stack, consumed):
    before = len(ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages)
    stack.enqueue(fixture_body("multi-recipient.json"))  # redelivery of an already-sent request
    stack.consume()
    assert len(ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages) == before


def test_sigterm_stops_the_consumer_cleanly(stack):
    process = subprocess.Popen(
        [*stack.manage, "consume_emails", "--wait-time", "1"],
        env=stack.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for line in process.stderr:  # blocks until the consumer has started polling
            if "event=consumer.configured" in line:
                break
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert "finishing in-flight records" in err
    assert out.startswith("received=")
