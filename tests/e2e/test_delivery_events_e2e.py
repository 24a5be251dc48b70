"""End to end on the moto server stack, with the real processes: a send to SES's simulator addresses
→ the simulated events (topic → events queue) → `consume_ses_events` → the journal rows say
BOUNCED / COMPLAINED / DELIVERED, the bounced address is suppressed, and the next request to it
leaves a SUPPRESSED row and sends nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.test_consume_e2e import key_for

pytestmark = pytest.mark.e2e

SIM = "simulator.amazonses.com"
CONTRACT = Path(__file__).resolve().parents[1] / "contract"


@pytest.fixture(scope="module")
def e2e_stack_options() -> dict:
    """This module's stack also carries delivery events, simulated for SES's simulator addresses."""
    return {
        "bucket": "emailops-events-e2e",
        "events_queue": "email-ses-events",
        "extra_env": {"SES_SIMULATE_EVENTS": "true", "SES_EVENTS_VERIFY_SIGNATURES": "false"},
    }


def request(email: str, team: str = "Ops") -> dict:
    return {
        "messageId": "added-to-team",
        "recipients": [{"email": email}],
        "context": {"teamName": team, "administrator": "Dave"},
    }


def suppression(e2e_stack, address: str) -> dict | None:
    return e2e_stack.item("email-suppression", {"Email": address})


@pytest.fixture(scope="module")
def delivered(e2e_stack):
    """Sends to bounce@, complaint@ and success@, then consumes the events they caused."""
    first = {name: request(f"{name}@{SIM}") for name in ("bounce", "complaint", "success")}
    e2e_stack.enqueue(list(first.values()))
    e2e_stack.consume()
    out = e2e_stack.consume("consume_ses_events").stdout
    return first, out


def test_simulator_events_reach_the_journal(e2e_stack, delivered):
    first, out = delivered
    # Send + Bounce, Send + Delivery + Complaint, Send + Delivery: each applied once. SQS delivers
    # at least once (seen once here: one event received twice): a copy received again must be
    # counted as a duplicate, never applied twice.
    counts = {k: int(v) for k, v in re.findall(r"\b(received|applied|duplicates)=(\d+)", out)}
    assert counts["applied"] == 7
    assert counts["received"] == 7 + counts.get("duplicates", 0)
    bounced = e2e_stack.row(key_for(first["bounce"], f"bounce@{SIM}"))
    assert bounced["Status"] == "SENT"
    assert bounced["DeliveryStatus"] == "BOUNCED"
    assert (bounced["BounceType"], bounced["BounceSubType"]) == ("Permanent", "General")
    assert bounced["DiagnosticCode"] == "smtp; 550 5.1.1 user unknown"
    assert [e["M"]["Type"]["S"] for e in bounced["DeliveryEvents"]] == ["Send", "Bounce"]
    complained = e2e_stack.row(key_for(first["complaint"], f"complaint@{SIM}"))
    assert complained["DeliveryStatus"] == "COMPLAINED"
    assert (
        e2e_stack.row(key_for(first["success"], f"success@{SIM}"))["DeliveryStatus"] == "DELIVERED"
    )


def test_a_hard_bounce_and_a_complaint_suppress_the_address(e2e_stack, delivered):
    entry = suppression(e2e_stack, f"bounce@{SIM}")
    assert entry["Reason"] == "bounce" and "mailbox does not exist" in entry["Detail"]
    assert suppression(e2e_stack, f"complaint@{SIM}")["Reason"] == "complaint"
    assert suppression(e2e_stack, f"success@{SIM}") is None


def test_the_next_request_to_a_suppressed_address_sends_nothing(e2e_stack, delivered):
    before = len(e2e_stack.sent_to(f"bounce@{SIM}"))
    again = request(f"bounce@{SIM}", team="Ops again")  # a new request: a new journal row
    e2e_stack.enqueue([again])
    e2e_stack.consume()
    row = e2e_stack.row(key_for(again, f"bounce@{SIM}"))
    assert row["Status"] == "SUPPRESSED"
    assert "bounce" in row["Error"]
    assert "SesMessageId" not in row
    assert len(e2e_stack.sent_to(f"bounce@{SIM}")) == before


def test_a_go_topic_identity_notification_lands_on_its_row(e2e_stack, delivered):
    """The Go branch routes SES bounce *notifications* (``notificationType``) to its own topic:
    bootstrap_aws subscribes the events queue to it, and consume_ses_events applies them."""
    body = request("legacy@example.com", team="Legacy")
    e2e_stack.enqueue([body])
    e2e_stack.consume()
    e2e_stack.consume("consume_ses_events")  # its simulated Send and Delivery
    ses_id = e2e_stack.row(key_for(body, "legacy@example.com"))["SesMessageId"]

    sns = e2e_stack.client("sns")
    go_topic = sns.create_topic(Name="go-ses-notifications")["TopicArn"]
    env = {"SES_EVENTS_NOTIFICATIONS_TOPIC_ARN": go_topic}
    assert f"topic {go_topic}: subscribed by" in e2e_stack.manage("bootstrap_aws", env=env).stdout
    notification = (
        (CONTRACT / "ses-events" / "legacy-bounce-notification.json")
        .read_text()
        .replace("recipient@example.com", "legacy@example.com")
        .replace("EXAMPLE7c191be45-e9aedb9a-02f9-4d12-a87d-dd0099a07f8a-000000", ses_id)
    )
    sns.publish(TopicArn=go_topic, Message=notification)
    out = e2e_stack.consume("consume_ses_events", env=env).stdout
    assert re.search(r"\bapplied=1\b", out), out
    row = e2e_stack.row(key_for(body, "legacy@example.com"))
    assert (row["DeliveryStatus"], row["BounceType"]) == ("BOUNCED", "Permanent")
    assert suppression(e2e_stack, "legacy@example.com")["Reason"] == "bounce"
