"""Records the consumer holds, and the threads that serve them all: the lease keeper and deletes.

A record is held from the moment it is received until its outcome is acted on. The lease keeper
extends a held record's visibility, and the journal claims it holds, once half the lease has passed,
so a slow send (or a wait for the shared send rate) never lets a second consumer claim a recipient.
Deletes are batched across records and flushed within a fraction of a second, so one slow record
never holds finished ones past their visibility timeout.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from emailops.aws.sqs import QueueMessage, SqsQueue
from emailops.core.errors import EmailOpsError
from emailops.core.events import EventLog
from emailops.core.pipeline import HeldClaims
from emailops.core.ports import Journal

__all__ = ["Capacity", "DeleteBatcher", "Held", "InFlight", "LeaseKeeper"]

logger = logging.getLogger("worker.consumer")


class Capacity:
    """How many more records may be held: receivers take slots before they receive (bounded
    prefetch, so memory stays flat whatever the queue depth); finished records give them back."""

    def __init__(self, slots: int) -> None:
        self._free = slots
        self._cond = threading.Condition()

    def take(self, most: int, *, timeout: float) -> int:
        with self._cond:
            if not self._cond.wait_for(lambda: self._free > 0, timeout=timeout):
                return 0
            taken = min(most, self._free)
            self._free -= taken
            return taken

    def give(self, count: int) -> None:
        if count:
            with self._cond:
                self._free += count
                self._cond.notify_all()


@dataclass
class Held:
    message: QueueMessage
    claims: HeldClaims = field(default_factory=HeldClaims)
    extended_at: float = field(default_factory=time.monotonic)


class InFlight:
    """Every held record, by SQS message id."""

    def __init__(self) -> None:
        self._held: dict[str, Held] = {}
        self._lock = threading.Lock()

    def add(self, message: QueueMessage) -> Held:
        held = Held(message)
        with self._lock:
            self._held[message.receipt_handle] = held
        return held

    def remove(self, message: QueueMessage) -> None:
        with self._lock:
            self._held.pop(message.receipt_handle, None)

    def snapshot(self) -> list[Held]:
        with self._lock:
            return list(self._held.values())

    def __len__(self) -> int:
        return len(self._held)


class LeaseKeeper:
    """Extends what a record holds once half its lease has passed."""

    def __init__(
        self,
        *,
        inflight: InFlight,
        queue: SqsQueue,
        journal: Journal,
        visibility_seconds: int,
        lease_seconds: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.inflight = inflight
        self.queue = queue
        self.journal = journal
        self.visibility_seconds = visibility_seconds
        self.lease_seconds = lease_seconds
        self.clock = clock
        self.half = min(visibility_seconds, lease_seconds) / 2
        # Look often enough that no lease can end between two looks.
        self.tick = max(0.2, min(5.0, self.half / 4))

    def extend_due(self, now: float | None = None) -> int:
        """Extend every held record whose last extension is half a lease old; returns how many.

        Visibility goes ten records a call: a consumer holding dozens of records must extend
        them all well within the other half of the lease, however slow each call is."""
        now = time.monotonic() if now is None else now
        due = [held for held in self.inflight.snapshot() if now - held.extended_at >= self.half]
        if not due:
            return 0
        try:
            self.queue.extend_visibility([h.message for h in due], self.visibility_seconds)
        except EmailOpsError as exc:
            EventLog(logger).warning(
                "lease.visibility_failed", count=len(due), error=exc.describe()
            )
        until = int(self.clock()) + self.lease_seconds
        for held in due:
            held.extended_at = now
            self._extend_claims(held, until)
        return len(due)

    def _extend_claims(self, held: Held, until: int) -> None:
        log = EventLog(logger, sqsMessageId=held.message.message_id)
        for key, attempt in held.claims.snapshot().items():
            try:
                ours = self.journal.extend_claim(key, attempt=attempt, until=until)
            except EmailOpsError as exc:
                log.warning("lease.claim_failed", key=key, error=exc.describe())
                continue
            log.info("lease.extended", key=key, attempt=attempt, until=until, ours=ours)


class DeleteBatcher:
    """Collects finished records and deletes them ten at a time, or after ``max_delay``."""

    def __init__(
        self, sqs: SqsQueue, *, on_deleted: Callable[[int], None], max_delay: float = 0.2
    ) -> None:
        self.queue = sqs
        self.on_deleted = on_deleted
        self.max_delay = max_delay
        self._pending: queue.Queue[QueueMessage | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def add(self, message: QueueMessage) -> None:
        with self._lock:  # the thread starts with the first delete (and again after a close)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="sqs-deletes", daemon=True)
                self._thread.start()
            self._pending.put(message)

    def close(self, timeout: float = 10) -> None:
        """Flush what is pending and stop."""
        with self._lock:
            thread, self._thread = self._thread, None
            if thread is not None:
                self._pending.put(None)
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        batch: list[QueueMessage] = []
        deadline = 0.0
        while True:
            wait = max(0.0, deadline - time.monotonic()) if batch else None
            try:
                message = self._pending.get(timeout=wait)
            except queue.Empty:
                message = False  # the oldest pending delete is due
            if message is None:
                self._flush(batch)
                return
            if message is not False:
                if not batch:
                    deadline = time.monotonic() + self.max_delay
                batch.append(message)
            if message is False or len(batch) >= 10:
                self._flush(batch)
                batch = []

    def _flush(self, batch: list[QueueMessage]) -> None:
        if not batch:
            return
        try:
            failed = self.queue.delete_batch(batch)
        except EmailOpsError as exc:
            # They reappear after the visibility timeout and are skipped as already SENT.
            EventLog(logger).warning("delete.failed", count=len(batch), error=exc.describe())
            failed = [m.message_id for m in batch]
        self.on_deleted(len(batch) - len(failed))
