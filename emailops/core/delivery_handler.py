"""One events-queue message: verify → parse → suppress → find the journal row → apply, or store.

The storage seams are small protocols (DynamoDB adapters in ``emailops.aws``; fakes in tests). The
outcome tells the consumer what to do with the message: delete it, leave it for redelivery
(transient trouble), or dead-letter it (a message we cannot trust or read).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
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
from emailops.core.erasure import Tombstones, erased_of, scrubbed_event
from emailops.core.errors import EmailOpsError
from emailops.core.events import EventLog
from emailops.core.journal_row import JournalRow
from emailops.core.ports import Stats, SuppressionWriter
from emailops.core.reputation import event_counter, hour_of
from emailops.core.webhooks import NullOutbox, WebhookEvent, WebhookOutbox, event_from_delivery

__all__ = [
    "ApplyResult",
    "DeliveryEventHandler",
    "EventAction",
    "EventJournal",
    "EventOutcome",
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

    def read_rows(self, keys: Iterable[str]) -> dict[str, JournalRow | None]:
        """The rows of ``keys`` in one batch (None for a key with no row), as ``apply_events``
        takes them."""
        ...

    def apply_events(
        self,
        key: str,
        events: Sequence[DeliveryEvent],
        *,
        now: int,
        row: JournalRow | None = None,
        on_applied: Callable[[DeliveryEvent, str, str | None], None] | None = None,
        webhooks: Callable[[DeliveryEvent], WebhookEvent | None] | None = None,
    ) -> list[ApplyResult]:
        """Apply one email's events to its row in one conditional write (``row``: as
        ``read_rows`` read it; None: read it here); a result per event. ``on_applied(event,
        message_id, organization)`` runs per event once the write holding it succeeded (so
        never for a duplicate). ``webhooks(event)``: the webhook event an applied event makes,
        stored in that same write (the durable outbox)."""
        ...


class UnmatchedEvents(Protocol):
    def store(self, event: DeliveryEvent, *, reason: str, now: int) -> None: ...


Verifier = Callable[[SnsEnvelope | None], None]
Group = list[tuple[int, DeliveryEvent, int]]  # (position in the batch, event, receive count)
Runner = Callable[[Callable[[Group], list], Iterable[Group]], Iterable[list]]


def _one_by_one(task: Callable[[Group], list], groups: Iterable[Group]) -> Iterable[list]:
    return map(task, groups)


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


@dataclass(eq=False, kw_only=True)
class DeliveryEventHandler:
    journal: EventJournal
    suppressions: SuppressionWriter
    unmatched: UnmatchedEvents
    verify: Verifier
    clock: Callable[[], float]
    # An event can overtake the journal write it belongs to (our mark_sent, or the SES id index
    # catching up): an unmatched event is retried this many times before it is stored.
    unmatched_retries: int = 1
    stats: Stats | None = None
    # Erasure's tombstones: an event that finds no row and names an erased recipient is stored
    # without anything personal (it is typically in flight while the erasure ran).
    tombstones: Tombstones | None = None
    # Delivery webhooks: told of each event once the write that put it on its row succeeded.
    outbox: WebhookOutbox = field(default_factory=NullOutbox)

    def handle(self, body: str, *, receive_count: int = 1) -> EventOutcome:
        return self.handle_batch([(body, receive_count)])[0]

    def handle_batch(
        self, messages: Sequence[tuple[str, int]], *, run: Runner = _one_by_one
    ) -> list[EventOutcome]:
        """An outcome per ``(body, receive_count)``, in order. The events of one email (one
        journal row) are applied together in one conditional write; their rows are read first
        in one batch (``read_rows``). ``run(task, groups)`` runs a task per email's group, and
        may run them at once (the consumer hands its thread pool's map): groups touch different
        rows, and one email's events stay in one task."""
        outcomes: list[EventOutcome | None] = [None] * len(messages)
        groups: dict[tuple[str, str], Group] = {}
        for i, (body, receive_count) in enumerate(messages):
            parsed = self._parse(body)
            if isinstance(parsed, EventOutcome):
                outcomes[i] = parsed
                continue
            if parsed.journal_key:
                group = ("key", parsed.journal_key)
            else:
                group = ("ses", parsed.ses_message_id) if parsed.ses_message_id else ("#", str(i))
            groups.setdefault(group, []).append((i, parsed, receive_count))
        rows = self._read_rows({key for kind, key in groups if kind == "key"})
        now = int(self.clock())

        def task(group: Group) -> list[tuple[int, EventOutcome]]:
            try:
                return self._apply_group(group, rows, now)
            except Exception as exc:  # a bug must not take the batch down; SQS will redeliver
                logger.exception("event.crashed events=%d", len(group))
                reason = f"internal error: {exc!r}"
                return [(i, EventOutcome(EventAction.RETRY, reason=reason)) for i, _, _ in group]

        for group_outcomes in run(task, list(groups.values())):
            for i, outcome in group_outcomes:
                outcomes[i] = outcome
        return [
            outcome or EventOutcome(EventAction.RETRY, reason="internal error: no outcome")
            for outcome in outcomes
        ]

    def _parse(self, body: str) -> DeliveryEvent | EventOutcome:
        try:
            data, envelope = parse_envelope(body)
            self.verify(envelope)
            return parse_event(data, envelope)
        except BadEvent as exc:
            return EventOutcome(EventAction.DEAD_LETTER, reason=exc.describe())
        except EmailOpsError as exc:  # e.g. the signing certificate could not be fetched
            return EventOutcome(EventAction.RETRY, reason=exc.describe())

    def _read_rows(self, keys: set[str]) -> dict[str, JournalRow | None]:
        """The rows the tagged events name, in one batch; {} when the read failed (each group
        then reads its own row, and meets the trouble there)."""
        if not keys:
            return {}
        try:
            return self.journal.read_rows(keys)
        except EmailOpsError as exc:
            EventLog(logger).warning("rows.not_read", count=len(keys), error=exc.describe())
            return {}

    def _apply_group(
        self,
        group: list[tuple[int, DeliveryEvent, int]],
        rows: dict[str, JournalRow | None],
        now: int,
        *,
        suppressed: bool = False,
    ) -> list[tuple[int, EventOutcome]]:
        """One email's events: suppress (before the journal, never waiting for it), then one
        write for all of them. Trouble with the write leaves every event of the group for
        redelivery; a permanent error is narrowed down by applying them one by one."""
        done: list[tuple[int, EventOutcome]] = []
        pending: list[tuple[int, DeliveryEvent, int]] = []
        key = group[0][1].journal_key
        row = rows.get(key) if key else None
        # An event on its row already was suppressed before it was applied: not again (the
        # address may have been lifted since, on purpose).
        on_row = {entry.id for entry in row.timeline} if row else set()
        for i, event, receive_count in group:
            try:
                if not suppressed and event.event_id not in on_row:
                    self._suppress(event, now, written=row.recipient if row else "")
            except EmailOpsError as exc:
                done.append((i, self._failed(event, exc)))
                continue
            pending.append((i, event, receive_count))
        if not pending:
            return done
        try:
            results = self._apply_events(key, rows, [e for _, e, _ in pending], now)
            return done + [
                (i, self._outcome(event, found, result, receive_count, now))
                for (i, event, receive_count), (found, result) in zip(pending, results, strict=True)
            ]
        except EmailOpsError as exc:
            if not exc.permanent or len(pending) == 1:
                return done + [(i, self._failed(event, exc)) for i, event, _ in pending]
        # One of them cannot be written (or stored): find which; the others still apply.
        for item in pending:
            done += self._apply_group([item], {}, now, suppressed=True)
        return done

    def _apply_events(
        self,
        key: str | None,
        rows: dict[str, JournalRow | None],
        events: list[DeliveryEvent],
        now: int,
    ) -> list[tuple[str | None, ApplyResult]]:
        """(row key, result) per event. The tag names the row, read already: no lookup first.
        Only events whose tag names no row (or that have no tag) are looked up by SES id."""
        events = self._for_row(events)
        counters = {event.event_id: self._counter(event, now) for event in events}

        def applied_to(row_key: str) -> Callable[[DeliveryEvent, str, str | None], None]:
            def applied(event: DeliveryEvent, message_id: str, organization: str | None) -> None:
                if (count := counters.get(event.event_id)) is not None:
                    count(message_id, organization)
                self._emit(row_key, event)

            return applied

        def webhooks(row_key: str) -> Callable[[DeliveryEvent], WebhookEvent | None]:
            return lambda event: event_from_delivery(row_key, event)

        results = [ApplyResult.GONE] * len(events)
        if key and not (key in rows and rows[key] is None):  # None: read, and there is no row
            results = self.journal.apply_events(
                key,
                events,
                now=now,
                row=rows.get(key),
                on_applied=applied_to(key),
                webhooks=webhooks(key),
            )
        if ApplyResult.GONE not in results:
            return [(key, result) for result in results]
        found = self.journal.find_row_key(events[0])  # one email's events: one SES id
        if found and found != key:
            results = self.journal.apply_events(
                found, events, now=now, on_applied=applied_to(found), webhooks=webhooks(found)
            )
            key = found
        return [(key, result) for result in results]

    def _emit(self, key: str, event: DeliveryEvent) -> None:
        """Wake delivery of the webhook event the write stored beside the fact. Never fails
        the event: a lost wake-up is logged (the outbox's sweep delivers the event)."""
        try:
            if (webhook := event_from_delivery(key, event)) is not None:
                self.outbox.emit(webhook)
        except Exception as exc:
            self._log(event).warning("webhook.not_emitted", key=key, error=repr(exc))

    def _suppress(self, event: DeliveryEvent, now: int, *, written: str = "") -> None:
        """``written``: the recipient as the producer wrote it (the row's), written as well where
        it is the same mailbox, for the Go service's exact lookup."""
        for address, reason, detail in event.suppressions():
            source = event.ses_message_id or event.event_id
            also = (written,) if written else ()
            if self.suppressions.add(
                address, reason=reason, detail=detail, source=source, now=now, also=also
            ):
                self._log(event).info(
                    "suppression.added",
                    address=self._loggable(address),
                    reason=reason,
                    detail=detail,
                )

    def _loggable(self, address: str) -> str:
        """An erased address is logged by its hash (a rare line: a suppression was added)."""
        tombstones = self.tombstones
        if tombstones is not None and tombstones.erased_at(address) is not None:
            return tombstones.name(address)
        return address

    @staticmethod
    def _log(event: DeliveryEvent) -> EventLog:
        return EventLog(
            logger,
            eventType=event.raw_type,
            eventId=event.event_id,
            sesMessageId=event.ses_message_id or None,
        )

    @staticmethod
    def _failed(event: DeliveryEvent, exc: EmailOpsError) -> EventOutcome:
        action = EventAction.DEAD_LETTER if exc.permanent else EventAction.RETRY
        return EventOutcome(action, reason=exc.describe(), event=event)

    def _outcome(
        self,
        event: DeliveryEvent,
        key: str | None,
        result: ApplyResult,
        receive_count: int,
        now: int,
    ) -> EventOutcome:
        log = self._log(event)
        if event.type is EventType.UNKNOWN:
            self._store_unmatched(event, reason="unknown event type", now=now)
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
            stored = self._store_unmatched(event, reason="no journal row", now=now)
            self._log(stored).warning("event.unmatched", journalKey=stored.journal_key)
            return EventOutcome(EventAction.DELETE, result="stored", event=event)
        log.info("event.applied", key=key, result=result.value, summary=event.summary)
        return EventOutcome(EventAction.DELETE, result=result.value, event=event)

    def _for_row(self, events: list[DeliveryEvent]) -> list[DeliveryEvent]:
        """The events as a row may keep them: the row of an erased recipient (sent to after the
        erasure, journalled by hash) gets them without anything personal. One email's events name
        one recipient: one tombstone check (the Redis set's, no AWS call) per email."""
        tombstones = self.tombstones
        if tombstones is None or not erased_of(tombstones, events[0].recipients[:1]):
            return events
        return [scrubbed_event(event, tombstones) for event in events]

    def _store_unmatched(self, event: DeliveryEvent, *, reason: str, now: int) -> DeliveryEvent:
        """Store it, scrubbed if it names an erased recipient; returns what was stored."""
        if self.tombstones is not None and erased_of(self.tombstones, event.recipients):
            event = scrubbed_event(event, self.tombstones)
            reason += "; a recipient was erased"
        self.unmatched.store(event, reason=reason, now=now)
        return event

    def _counter(self, event: DeliveryEvent, now: int) -> Callable[[str, str | None], None] | None:
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
                self._log(event).warning(
                    "stats.not_counted", counter=name, error=f"{type(exc).__name__}: {exc}"
                )

        return count
