"""End to end on the moto server stack, with the real processes: a send to SES's simulator addresses
→ the simulated events (topic → events queue) → `consume_ses_events` → the journal rows say
BOUNCED / COMPLAINED / DELIVERED, the bounced address is suppressed, and the next request to it
leaves a SUPPRESSED row and sends nothing."""

from __future__ import annotations

import os
import subprocess
import sys

import boto3
import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.server import ThreadedMotoServer

from tests.conftest import SAMPLES
from tests.e2e.test_consume_e2e import ROOT, Stack, free_port, key_for, sent_to

pytestmark = pytest.mark.e2e

SIM = "simulator.amazonses.com"


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
        "S3_BUCKET": "emailops-events-e2e",
        "EMAIL_SENDER": "Pennsieve <support@pennsieve.test>",
        "EMAIL_SERVICE_QUEUE_URL": f"{endpoint}/{DEFAULT_ACCOUNT_ID}/email-service-queue",
        "SES_EVENTS_QUEUE_URL": f"{endpoint}/{DEFAULT_ACCOUNT_ID}/email-ses-events",
        "SES_SIMULATE_EVENTS": "true",
        "SES_EVENTS_VERIFY_SIGNATURES": "false",
    }
    env.pop("AWS_PROFILE", None)
    manage = [sys.executable, str(ROOT / "manage.py")]
    for command in (
        ["bootstrap_aws", "--visibility-timeout", "60"],
        ["load_templates", str(SAMPLES / "templates")],
        ["load_template_mappings", str(SAMPLES / "mappings.json")],
    ):
        subprocess.run([*manage, *command], env=env, check=True, capture_output=True, timeout=120)

    def client(name):
        return boto3.client(
            name,
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    yield Stack(env=env, manage=manage, dynamodb=client("dynamodb"), sqs=client("sqs"))
    server.stop()


def run(stack: Stack, *command: str) -> str:
    result = subprocess.run(
        [*stack.manage, *command, "--until-empty", "--wait-time", "1"],
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def request(email: str, team: str = "Ops") -> dict:
    return {
        "messageId": "added-to-team",
        "recipients": [{"email": email}],
        "context": {"teamName": team, "administrator": "Dave"},
    }


def suppression(stack: Stack, address: str) -> dict | None:
    item = stack.dynamodb.get_item(
        TableName="email-suppression", Key={"Address": {"S": address}}, ConsistentRead=True
    ).get("Item")
    return {k: next(iter(v.values())) for k, v in item.items()} if item else None


@pytest.fixture(scope="module")
def delivered(stack):
    """Sends to bounce@, complaint@ and success@, then consumes the events they caused."""
    first = {name: request(f"{name}@{SIM}") for name in ("bounce", "complaint", "success")}
    for body in first.values():
        stack.enqueue(body)
    run(stack, "consume_emails")
    out = run(stack, "consume_ses_events")
    return first, out


def test_simulator_events_reach_the_journal(stack, delivered):
    first, out = delivered
    # Send + Bounce, Send + Delivery + Complaint, Send + Delivery.
    assert "received=7 applied=7" in out
    bounced = stack.row(key_for(first["bounce"], f"bounce@{SIM}"))
    assert bounced["Status"] == "SENT"
    assert bounced["DeliveryStatus"] == "BOUNCED"
    assert (bounced["BounceType"], bounced["BounceSubType"]) == ("Permanent", "General")
    assert bounced["DiagnosticCode"] == "smtp; 550 5.1.1 user unknown"
    assert [e["M"]["Type"]["S"] for e in bounced["DeliveryEvents"]] == ["Send", "Bounce"]
    complained = stack.row(key_for(first["complaint"], f"complaint@{SIM}"))
    assert complained["DeliveryStatus"] == "COMPLAINED"
    assert stack.row(key_for(first["success"], f"success@{SIM}"))["DeliveryStatus"] == "DELIVERED"


def test_a_hard_bounce_and_a_complaint_suppress_the_address(stack, delivered):
    entry = suppression(stack, f"bounce@{SIM}")
    assert entry["Reason"] == "BOUNCE" and "mailbox does not exist" in entry["Detail"]
    assert suppression(stack, f"complaint@{SIM}")["Reason"] == "COMPLAINT"
    assert suppression(stack, f"success@{SIM}") is None


def test_the_next_request_to_a_suppressed_address_sends_nothing(stack, delivered):
    before = len(sent_to(f"bounce@{SIM}"))
    again = request(f"bounce@{SIM}", team="Ops again")  # a new request: a new journal row
    stack.enqueue(again)
    run(stack, "consume_emails")
    row = stack.row(key_for(again, f"bounce@{SIM}"))
    assert row["Status"] == "SUPPRESSED"
    assert "bounce" in row["Error"]
    assert "SesMessageId" not in row
    assert len(sent_to(f"bounce@{SIM}")) == before
