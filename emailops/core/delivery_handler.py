"""One events-queue message: verify → parse → suppress → find the journal row → apply, or store.

The storage seams are small protocols (DynamoDB adapters in ``emailops.aws``; fakes in tests). The
outcome tells the consumer what to do with the message: delete it, leave it for redelivery
(transient trouble), or dead-letter it (a message we cannot trust or read).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from emailops.core.delivery_events import (
    BadEvent,
    DeliveryEvent,
    EventType,
    SnsEnvelope,
    parse_envelope,
    parse_event,
)
from emailops.core.errors import EmailOpsError
from emailops.core.events import EventLog
from emailops.core.ports import Stats
from emailops.core.reputation import event_counter, hour_of

__all__ = [
    "ApplyResult",
    "DeliveryEventHandler",
    "EventAction",
    "EventJournal",
    "EventOutcome",
    "Suppressions",
    "UnmatchedEvents",
]

logger = logging.getLogger("emailops.delivery_events")


class ApplyResult(Enum):
    APPLIED = "applied"
    DUPLICATE = "duplicate"  # already on the row's timeline: applied once
    GONE = "gone"  # the row vanished between lookup and write (TTL)
    # A consumer holds a live claim on the row and has not marked it yet: the event waits for
    # that mark rather than racing it (it would turn the row SENT under the consumer's claim).
    CLAIMED = "claimed"


class EventJournal(Protocol):
    def find_row_key(self, event: DeliveryEvent) -> str | None:
        """The journal row the event belongs to: by the tag's key, else by SES message id."""
        ...

    def apply_event(
        self,
        key: str,
        event: DeliveryEvent,
        *,
        now: int,
        on_applied: Callable[[str, str | None], None] | None = None,
    ) -> ApplyResult:
        """Apply the event to the row. ``on_applied(message_id, organization)`` runs once the
        conditional write holding the event succeeded (so never for a duplicate)."""
        ...


class Suppressions(Protocol):
    def add(self, address: str, *, reason: str, detail: str, source: str, now: int) -> bool: ...


class UnmatchedEvents(Protocol):
    def store(self, event: DeliveryEvent, *, reason: str, now: int) -> None: ...


Verifier = Callable[[SnsEnvelope | None], None]


class EventAction(Enum):
    DELETE = "delete"
    RETRY = "retry"  # leave it on the queue; it comes back
    DEAD_LETTER = "dead-letter"


@dataclass(frozen=True)
class EventOutcome:
    action: EventAction
    result: str = ""  # applied | duplicate | stored (unmatched/unknown)
    reason: str = ""
    event: DeliveryEvent | None = None


class DeliveryEventHandler:
    def __init__(
        self,
        *,
        journal: EventJournal,
        suppressions: Suppressions,
        unmatched: UnmatchedEvents,
        verify: Verifier,
        clock: Callable[[], float],
        unmatched_retries: int = 1,
        stats: Stats | None = None,
    ) -> None:
        self.journal = journal
        self.suppressions = suppressions
        self.unmatched = unmatched
        self.verify = verify
        self.clock = clock
        # An event can overtake the journal write it belongs to (our mark_sent, or the SES id
        # index catching up): an unmatched event is retried this many times before it is stored.
        self.unmatched_retries = unmatched_retries
        self.stats = stats

    def handle(self, body: str, *, receive_count: int = 1) -> EventOutcome:
        try:
            data, envelope = parse_envelope(body)
            self.verify(envelope)
            event = parse_event(data, envelope)
        except BadEvent as exc:
            return EventOutcome(EventAction.DEAD_LETTER, reason=exc.describe())
        except EmailOpsError as exc:  # e.g. the signing certificate could not be fetched
            return EventOutcome(EventAction.RETRY, reason=exc.describe())
        log = EventLog(
            logger,
            eventType=event.raw_type,
            eventId=event.event_id,
            sesMessageId=event.ses_message_id or None,
        )
        try:
            return self._apply(event, receive_count, log)
        except EmailOpsError as exc:
            action = EventAction.DEAD_LETTER if exc.permanent else EventAction.RETRY
            return EventOutcome(action, reason=exc.describe(), event=event)

    def _apply(self, event: DeliveryEvent, receive_count: int, log: EventLog) -> EventOutcome:
        now = int(self.clock())
        for address, reason, detail in event.suppressions():
            source = event.ses_message_id or event.event_id
            if self.suppressions.add(address, reason=reason, detail=detail, source=source, now=now):
                log.info("suppression.added", address=address, reason=reason, detail=detail)
        # The tag names the row: apply reads it anyway, so no separate lookup first (one read
        # per event, not two). Only when it has no row is the row looked up (by SES id too).
        counted = self._counter(event, now, log)
        key = event.journal_key
        result = (
            self.journal.apply_event(key, event, now=now, on_applied=counted)
            if key
            else ApplyResult.GONE
        )
        if result is ApplyResult.GONE:
            found = self.journal.find_row_key(event)
            if found and found != key:
                key = found
                result = self.journal.apply_event(key, event, now=now, on_applied=counted)
        if event.type is EventType.UNKNOWN:
            self.unmatched.store(event, reason="unknown event type", now=now)
            log.warning("event.unknown", key=key)
            return EventOutcome(EventAction.DELETE, result="stored", event=event)
        if result is ApplyResult.CLAIMED:
            return EventOutcome(
                EventAction.RETRY,
                reason="the row is under a live claim; waiting for its mark",
                event=event,
            )
        if result is ApplyResult.GONE:
            if event.ses_message_id and receive_count <= self.unmatched_retries:
                return EventOutcome(
                    EventAction.RETRY, reason="no journal row (yet) for this event", event=event
                )
            self.unmatched.store(event, reason="no journal row", now=now)
            log.warning("event.unmatched", journalKey=event.journal_key)
            return EventOutcome(EventAction.DELETE, result="stored", event=event)
        log.info("event.applied", key=key, result=result.value, summary=event.summary)
        return EventOutcome(EventAction.DELETE, result=result.value, event=event)

    def _counter(
        self, event: DeliveryEvent, now: int, log: EventLog
    ) -> Callable[[str, str | None], None] | None:
        """What to count once the event is on its row (delivered, bounced, complained...)."""
        name = event_counter(event.raw_type, event.bounce_type or "")
        if self.stats is None or name is None:
            return None
        stats = self.stats

        def count(message_id: str, organization: str | None) -> None:
            try:
                stats.add(
                    message_id=message_id,
                    organization=organization,
                    hour=hour_of(now),
                    counts={name: 1},
                )
            except Exception as exc:  # a lost count must not redeliver (and recount) the event
                log.warning("stats.not_counted", counter=name, error=f"{type(exc).__name__}: {exc}")

        return count
