"""Webhook events are emitted after the journal write that records the fact, once: a redelivered
record or a duplicate SES event emits nothing; a failing outbox never fails a send or an event."""

from __future__ import annotations

from emailops.core.delivery_handler import DeliveryEventHandler
from emailops.core.errors import SendRejected
from tests.core.test_delivery_events import envelope, ses_event
from tests.core.test_delivery_handler import Journal, Recorder
from tests.core.test_pipeline import MINIMAL, Stack
from tests.fakes import RecordingOutbox


def test_a_send_emits_one_sent_event_and_its_redelivery_none():
    stack = Stack()
    stack.pipeline.outbox = outbox = RecordingOutbox()
    stack.process(MINIMAL)
    stack.process(MINIMAL)  # the record again: the row is SENT, nothing is written
    assert [e.type for e in outbox.events] == ["email.sent"]
    assert outbox.events[0].facts["ses_message_id"]


def test_a_permanent_failure_emits_email_failed_with_permanent():
    stack = Stack()
    stack.pipeline.outbox = outbox = RecordingOutbox()
    stack.sender.errors.append(SendRejected("send email", reason="address rejected"))
    stack.process(MINIMAL)
    assert [(e.type, e.facts["permanent"]) for e in outbox.events] == [("email.failed", True)]


def test_an_outbox_that_fails_costs_no_send():
    stack = Stack()
    stack.pipeline.outbox = RecordingOutbox(fail=True)
    outcome = stack.process(MINIMAL)
    assert outcome.sent == 1


def events_handler(outbox):
    return DeliveryEventHandler(
        journal=Journal(),
        suppressions=Recorder(),
        unmatched=Recorder(),
        verify=lambda envelope: None,
        clock=lambda: 1_764_513_087.5,
        outbox=outbox,
    )


def test_a_duplicate_ses_event_emits_one_webhook():
    outbox = RecordingOutbox()
    handler = events_handler(outbox)
    body = envelope(ses_event("bounce.json"))
    assert handler.handle(body).result == "applied"
    assert handler.handle(envelope(ses_event("bounce.json"), message_id="sns-2")).result == (
        "duplicate"
    )
    assert [e.type for e in outbox.events] == ["email.bounced"]
    bounced = outbox.events[0]
    assert bounced.journal_key == "row-1"
    assert bounced.facts["bounce_type"] and "hard" in bounced.facts


def test_a_failing_outbox_never_fails_the_event():
    handler = events_handler(RecordingOutbox(fail=True))
    assert handler.handle(envelope(ses_event("delivery.json"))).result == "applied"
