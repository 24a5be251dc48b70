"""The handler's decisions with in-memory stand-ins: what is deleted, retried or dead-lettered, and
that suppression never waits for the journal."""

from __future__ import annotations

import json

from emailops.core.delivery_events import BadEvent
from emailops.core.delivery_handler import ApplyResult, DeliveryEventHandler, EventAction
from emailops.core.errors import PermanentError, TransientError
from emailops.core.journal_row import JournalRow
from tests.core.test_delivery_events import envelope, ses_event


class Journal:
    def __init__(self, *, key: str | None = "row-1", error: Exception | None = None) -> None:
        self.key = key
        self.error = error
        self.applied: list = []

    def find_row_key(self, event):
        if self.error:
            raise self.error
        return self.key

    def read_rows(self, keys):
        if self.error:
            raise self.error
        return {key: (JournalRow(key=key) if key == self.key else None) for key in keys}

    def apply_events(self, key, events, *, now, row=None, on_applied=None, webhooks=None):
        if self.error:
            raise self.error
        if key != self.key:  # only one row exists
            return [ApplyResult.GONE] * len(events)
        results = []
        for event in events:
            seen = any(e.event_id == event.event_id for _, e in self.applied)
            self.applied.append((key, event))
            results.append(ApplyResult.DUPLICATE if seen else ApplyResult.APPLIED)
            if not seen and on_applied is not None:
                on_applied(event, "welcome", "7")
        return results


class Recorder:
    def __init__(self) -> None:
        self.calls: list = []

    def add(self, address, **kwargs):
        self.calls.append((address, kwargs))
        return True

    def store(self, event, **kwargs):
        self.calls.append((event.raw_type, kwargs))


def handler(journal=None, verify=lambda envelope: None):
    suppressions, unmatched = Recorder(), Recorder()
    built = DeliveryEventHandler(
        journal=journal or Journal(),
        suppressions=suppressions,
        unmatched=unmatched,
        verify=verify,
        clock=lambda: 1_764_513_087.5,
    )
    return built, suppressions, unmatched


def test_applied_then_duplicate():
    h, _, _ = handler()
    body = envelope(ses_event("delivery.json"))
    assert h.handle(body).result == "applied"
    assert h.handle(body).result == "duplicate"


def test_the_verifier_runs_before_parsing_and_its_refusal_dead_letters():
    def refuse(envelope):
        raise BadEvent("verify SNS message", reason="topic not allowed")

    h, suppressions, _ = handler(verify=refuse)
    outcome = h.handle(envelope(ses_event("bounce.json")))
    assert outcome.action is EventAction.DEAD_LETTER and "topic not allowed" in outcome.reason
    assert suppressions.calls == []  # nothing from an untrusted message is acted on


def test_trouble_fetching_a_certificate_is_retried():
    def unreachable(envelope):
        raise TransientError("fetch SNS signing certificate", reason="timed out")

    h, _, _ = handler(verify=unreachable)
    assert h.handle(envelope(ses_event("send.json"))).action is EventAction.RETRY


def test_aws_trouble_retries_and_a_permanent_error_dead_letters_after_suppressing():
    h, suppressions, _ = handler(Journal(error=TransientError("query", reason="throttled")))
    assert h.handle(json.dumps(ses_event("bounce.json"))).action is EventAction.RETRY
    assert [address for address, _ in suppressions.calls] == ["recipient@example.com"]
    assert suppressions.calls[0][1]["now"] == 1_764_513_087
    h, _, _ = handler(Journal(error=PermanentError("update", reason="item too large")))
    assert h.handle(json.dumps(ses_event("send.json"))).action is EventAction.DEAD_LETTER


def test_unmatched_waits_once_and_events_without_a_ses_id_are_stored_at_once():
    h, _, unmatched = handler(Journal(key=None))
    body = json.dumps(ses_event("delivery.json"))
    assert h.handle(body, receive_count=1).action is EventAction.RETRY
    assert h.handle(body, receive_count=2).result == "stored"
    no_id = {"eventType": "Send", "mail": {"destination": ["a@x.test"]}, "send": {}}
    assert h.handle(json.dumps(no_id), receive_count=1).result == "stored"
    assert [reason["reason"] for _, reason in unmatched.calls] == ["no journal row"] * 2


def counting_handler():
    from tests.fakes import InMemoryStats

    stats = InMemoryStats()
    built, _, _ = handler()
    built.stats = stats
    return built, stats


def test_each_outcome_counts_once_and_a_duplicate_event_never_again():
    h, stats = counting_handler()
    for name in (
        "delivery.json",
        "bounce.json",
        "bounce-transient.json",
        "complaint.json",
        "reject.json",
        "delivery-delay.json",
        "send.json",  # the consumer counted the send already
        "open.json",
    ):
        event = ses_event(name)
        event["mail"]["messageId"] += f"-{name}"  # the samples share one email; make them apart
        body = envelope(event)
        h.handle(body)
        h.handle(body)  # SNS/SQS delivered it twice: applied once, counted once
    expected = {
        "delivered": 1,
        "bounced_permanent": 1,
        "bounced_transient": 1,
        "complained": 1,
        "rejected": 1,
        "delayed": 1,
    }
    assert stats.totals() == expected
    assert stats.totals("message#welcome") == expected
    assert stats.totals("org#7") == expected


def test_a_stats_outage_does_not_redeliver_the_event():
    h, stats = counting_handler()
    stats.fail = TransientError("add reputation counts", reason="DynamoDB unavailable")
    outcome = h.handle(envelope(ses_event("delivery.json")))
    assert outcome.action is EventAction.DELETE and outcome.result == "applied"


class CountingJournal(Journal):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.lookups = 0

    def find_row_key(self, event):
        self.lookups += 1
        return super().find_row_key(event)


def test_an_event_tagged_with_its_row_costs_no_lookup():
    """The tag names the row and apply reads it anyway: one read per event, not two."""
    journal = CountingJournal(key="journal-key-1")  # the fixtures' tag
    h, _, _ = handler(journal)
    assert h.handle(envelope(ses_event("delivery.json"))).result == "applied"
    assert journal.lookups == 0
    assert journal.applied[0][0] == "journal-key-1"


def test_a_tag_without_a_row_falls_back_to_the_ses_id():
    journal = CountingJournal(key="row-1")
    h, _, _ = handler(journal)
    assert h.handle(envelope(ses_event("delivery.json"))).result == "applied"
    assert (journal.lookups, journal.applied[-1][0]) == (1, "row-1")
