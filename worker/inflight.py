"""Records the consumer holds, and the threads that serve them all: the lease keeper and deletes.

A record is held from the moment it is received until its outcome is acted on. The lease keeper
extends a held record's visibility, and the journal claims it holds, once a third of the lease has
passed, so a slow send (or a wait for the shared send rate) never lets a second consumer claim a
recipient. Its calls run in parallel on clients of their own (short timeouts, few attempts) with a
deadline per pass: one hung connection cannot starve every other lease, and what failed is tried
again at the next tick. Deletes are batched across records and flushed within a second, so one
slow record never holds finished ones past their visibility timeout.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_for
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

    def take(
        self, most: int, *, timeout: float, starving: Callable[[], bool] = lambda: True
    ) -> int:
        """Up to ``most`` slots. While ``starving()`` is false (workers still have records to
        start), wait until ``most`` are free: a slot freed one at a time must not become a
        receive of one (each receive is a billed call), unless the workers would sit idle."""
        with self._cond:
            if not self._cond.wait_for(
                lambda: self._free >= most or (self._free > 0 and starving()), timeout=timeout
            ):
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
    # When its visibility was last set (received, or extended successfully), time.monotonic().
    extended_at: float = field(default_factory=time.monotonic)
    started: bool = False  # a worker has begun on it: no longer simply handed back at a stop


class InFlight:
    """Every held record, by SQS message id."""

    def __init__(self) -> None:
        self._held: dict[str, Held] = {}
        self._lock = threading.Lock()

    def add(
        self,
        message: QueueMessage,
        *,
        received_at: float | None = None,
        stopping: Callable[[], bool] | None = None,
    ) -> Held:
        """Hold ``message``; ``received_at`` (monotonic) is when its visibility began."""
        held = Held(message, HeldClaims(stopping) if stopping else HeldClaims())
        if received_at is not None:
            held.extended_at = received_at
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


@dataclass(eq=False, kw_only=True)
class LeaseKeeper:
    """Extends what a record holds once a third of its lease has passed; a failed extension stays
    due, so the next tick (a fraction of a second later) tries again."""

    inflight: InFlight
    queue: SqsQueue
    journal: Journal
    visibility_seconds: int
    lease_seconds: int
    clock: Callable[[], float] = time.time
    threads: int = 8

    def __post_init__(self) -> None:
        self.third = min(self.visibility_seconds, self.lease_seconds) / 3
        # Look often enough that a failed extension has several more tries before a lease ends.
        self.tick = max(0.2, min(5.0, self.third / 4))
        # A pass waits this long for its calls; slower ones finish in the background.
        self.pass_seconds = max(0.5, min(2.0, self.third / 2))
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="lease")
        self._pending: Counter[Hashable] = Counter()  # calls under way, per record or claim
        self._lock = threading.Lock()

    def extend_due(self, now: float | None = None) -> int:
        """Extend every held record and claim a third of a lease old; returns how many calls
        went out. Visibility goes ten records a call."""
        now = time.monotonic() if now is None else now
        held = self.inflight.snapshot()
        wall = self.clock()
        until = int(wall) + self.lease_seconds
        due = [h for h in held if now - h.extended_at >= self.third and self._free(h)]
        claims = [
            (h, key, claim.attempt)
            for h in held
            for key, claim in h.claims.leases().items()
            if claim.until - wall <= self.lease_seconds - self.third
            and self._free((key, claim.attempt))
        ]
        futures = [
            self._submit([id(h) for h in due[i : i + 10]], self._visibility, due[i : i + 10], now)
            for i in range(0, len(due), 10)
        ]
        futures += [
            self._submit([(key, attempt)], self._claim, h, key, attempt, until)
            for h, key, attempt in claims
        ]
        if futures:
            wait_for(futures, timeout=self.pass_seconds)
        return len(futures)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _free(self, item: Held | tuple[str, int]) -> bool:
        """At most two calls at once for one thing: a second goes out while the first hangs."""
        with self._lock:
            return self._pending[id(item) if isinstance(item, Held) else item] < 2

    def _submit(self, ids: list[Hashable], fn: Callable[..., None], *args: object):
        with self._lock:
            self._pending.update(ids)

        def call() -> None:
            try:
                fn(*args)
            finally:
                with self._lock:
                    self._pending.subtract(ids)
                    for i in ids:
                        if self._pending[i] <= 0:
                            del self._pending[i]

        return self._pool.submit(call)

    def _visibility(self, due: list[Held], started: float) -> None:
        try:
            refused = set(
                self.queue.extend_visibility([h.message for h in due], self.visibility_seconds)
            )
        except EmailOpsError as exc:
            EventLog(logger).warning(
                "lease.visibility_failed", count=len(due), error=exc.describe(), retry="next tick"
            )
            return
        for held in due:
            if held.message.message_id in refused:
                EventLog(logger, sqsMessageId=held.message.message_id).warning(
                    "lease.visibility_refused", retry="next tick"
                )
            else:
                held.extended_at = max(held.extended_at, started)

    def _claim(self, held: Held, key: str, attempt: int, until: int) -> None:
        log = EventLog(logger, sqsMessageId=held.message.message_id)
        try:
            ours = self.journal.extend_claim(key, attempt=attempt, until=until)
        except EmailOpsError as exc:
            log.warning("lease.claim_failed", key=key, error=exc.describe(), retry="next tick")
            return
        if ours:
            held.claims.extended(key, attempt, until)
            log.info("lease.extended", key=key, attempt=attempt, until=until)
        else:  # taken over, or marked: the pipeline must not send on it
            held.claims.mark_lost(key, attempt)
            log.warning("lease.claim_lost", key=key, attempt=attempt)


class DeleteBatcher:
    """Collects finished records and deletes them ten at a time, or after ``max_delay``: a
    second is safe (a finished record still has at least two thirds of its visibility timeout,
    the keeper saw to that), and at ten records a second it fills batches: 0.1 calls per
    record where 0.2 s cost 0.5."""

    def __init__(
        self,
        sqs: SqsQueue,
        *,
        on_deleted: Callable[[int], None],
        max_delay: float = 1.0,
        on_died: Callable[[str, BaseException], None] | None = None,
    ) -> None:
        self.queue = sqs
        self.on_deleted = on_deleted
        self.max_delay = max_delay
        self.on_died = on_died  # told if the thread dies, so the consumer does not go on without it
        self._pending: queue.Queue[QueueMessage | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def add(self, message: QueueMessage) -> None:
        with self._lock:  # the thread starts with the first delete (and again after a close)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._watched, name="sqs-deletes", daemon=True
                )
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

    def _watched(self) -> None:
        try:
            self._run()
        except BaseException as exc:
            if self.on_died is None:
                raise
            self.on_died("sqs-deletes", exc)

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
