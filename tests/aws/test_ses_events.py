"""What the sender adds for delivery events (configuration set, journal-key tag), and the local
stack's mailbox simulator publishing SES-shaped events to the events topic."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from emailops import container
from emailops.aws.ses import SesSender
from emailops.aws.ses_simulator import SimulatingSender, simulated_events
from emailops.core.delivery_events import (
    JOURNAL_KEY_TAG,
    EventType,
    decode_journal_key,
    parse_envelope,
    parse_event,
)
from emailops.core.ports import OutgoingEmail

EMAIL = OutgoingEmail(
    from_address="Pennsieve <support@pennsieve.test>",
    to="Alice <alice@example.com>",
    subject="Hello",
    html="<p>Hi</p>",
    journal_key="dedupe-1:alice@example.com",
)


@pytest.fixture
def requests(aws):
    seen: list[dict] = []

    def record(params, **_):
        seen.append(params)

    aws.ses.meta.events.register("provide-client-params.ses.SendEmail", record)
    yield seen
    aws.ses.meta.events.unregister("provide-client-params.ses.SendEmail", record)


def test_emails_carry_the_configuration_set_and_the_journal_key(aws, settings, requests):
    assert container.current().sender.configuration_set == "emailops"  # the default
    SesSender(aws.ses, configuration_set="emailops-test").send(EMAIL)
    [params] = requests
    assert params["ConfigurationSetName"] == "emailops-test"
    [tag] = params["Tags"]
    assert tag["Name"] == JOURNAL_KEY_TAG
    assert decode_journal_key(tag["Value"]) == EMAIL.journal_key


def test_no_configuration_set_and_no_key_means_neither_is_sent(aws, requests):
    SesSender(aws.ses).send(replace(EMAIL, journal_key=""))
    [params] = requests
    assert "ConfigurationSetName" not in params and "Tags" not in params


def test_a_key_too_long_for_a_tag_still_sends_untagged(aws, requests):
    SesSender(aws.ses).send(replace(EMAIL, journal_key="k" * 300))
    [params] = requests
    assert "Tags" not in params


# --- the simulator --------------------------------------------------------------------------------

SIM = "simulator.amazonses.com"


def kinds(to: str) -> list[tuple[str, str]]:
    events = simulated_events(replace(EMAIL, to=to), "ses-1", now_ms=1_764_513_087_123)
    parsed = [parse_event(e, None) for e in events]
    return [(e.type.value, e.bounce_subtype) for e in parsed]


def test_the_simulator_addresses():
    assert kinds(f"bounce@{SIM}") == [("Send", ""), ("Bounce", "General")]
    assert kinds(f"Bounce+label@{SIM}") == [("Send", ""), ("Bounce", "General")]
    assert kinds(f"complaint@{SIM}") == [("Send", ""), ("Delivery", ""), ("Complaint", "")]
    assert kinds(f"suppressionlist@{SIM}") == [("Send", ""), ("Bounce", "OnAccountSuppressionList")]
    assert kinds(f"success@{SIM}") == [("Send", ""), ("Delivery", "")]
    assert kinds("Someone <someone@example.com>") == [("Send", ""), ("Delivery", "")]
    assert kinds("bounce@example.com") == [("Send", ""), ("Delivery", "")]


def test_simulated_events_read_like_ses_ones():
    events = simulated_events(
        replace(EMAIL, to=f"Bob <bounce@{SIM}>"), "ses-9", now_ms=1_764_513_087_123
    )
    bounce = parse_event(events[-1], None)
    assert bounce.ses_message_id == "ses-9"
    assert bounce.journal_key == EMAIL.journal_key
    assert bounce.recipients == (f"bounce@{SIM}",)
    assert bounce.at == "2025-11-30T14:31:28.123Z"  # a second after the send
    assert bounce.diagnostic_code == "smtp; 550 5.1.1 user unknown"
    assert bounce.suppressions()[0][:2] == (f"bounce@{SIM}", "bounce")


def test_the_simulating_sender_publishes_through_the_events_topic(aws_events, settings):
    settings.SES_SIMULATE_EVENTS = True
    container.reset()
    sender = container.current().sender
    assert isinstance(sender, SimulatingSender)
    message_id = sender.send(replace(EMAIL, to=f"complaint@{SIM}"))
    [sent] = aws_events.sent_emails()
    assert sent.id == message_id
    bodies = []
    for _ in range(5):  # SQS hands out a sample per call
        for m in aws_events.queue_messages(aws_events.events_queue_url):
            bodies.append(m["Body"])
            aws_events.sqs.delete_message(
                QueueUrl=aws_events.events_queue_url, ReceiptHandle=m["ReceiptHandle"]
            )
        if len(bodies) >= 3:
            break
    events = [parse_event(*parse_envelope(b)) for b in bodies]
    assert all(json.loads(b)["TopicArn"] == aws_events.topic_arn for b in bodies)
    assert sorted(e.type for e in events) == sorted(
        [EventType.SEND, EventType.DELIVERY, EventType.COMPLAINT]
    )
    assert {e.ses_message_id for e in events} == {message_id}
    sender.verify_sender("support@pennsieve.test")  # the rest passes through
