"""The receiving side of the queue worker (``worker.queue_loop.QueueWorker``): receivers
long-poll at once and take capacity slots first, so at most ``workers * per_call + prefetch``
messages are held whatever the queue depth. A receiver gathers up to ``gather`` messages (receives
of ``per_receive`` back to back while they come back full; only the first long-polls), shows them
to the disposition (``on_received``) and hands the rest on in units of ``per_call``. A stop during
a receive hands what it brought back at once.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from emailops.aws.sqs import QueueMessage, SqsQueue
from emailops.core.errors import ConfigurationFault, EmailOpsError
from emailops.core.events import EventLog
from worker.inflight import Capacity, Held, InFlight
from worker.queue_worker import MessageBudget, Supervisor, hand_back
from worker.stats import Counters

__all__ = ["ReceiveRun", "Receiver"]

logger = logging.getLogger("worker.queue_worker")


@dataclass(eq=False, kw_only=True)
class ReceiveRun:
    """One run's shared bookkeeping between its receivers and workers: capacity (bounded
    in-flight), the work queue, the message budget, whether it drained."""

    capacity: Capacity
    work: queue.Queue
    budget: MessageBudget
    until_empty: bool
    wait_time: int
    per_receive: int
    gather: int
    per_call: int
    stop: threading.Event
    receivers: int  # still receiving (--until-empty retires them one by one)
    workers: int
    busy: int = 0  # workers on a unit now
    drained: threading.Event = field(default_factory=threading.Event)
    received: int = 0  # messages received so far, by every receiver
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def reserve(self, wanted: int) -> int:
        """Limit a receive to what --max-messages still allows; drained once it allows none."""
        if not wanted:
            return wanted
        allowed = self.budget.reserve(wanted)
        if allowed < wanted:
            self.capacity.give(wanted - allowed)
        if not allowed:
            self.drained.set()
        return allowed

    def starving(self) -> bool:
        """A worker is idle with nothing to take."""
        return self.work.empty() and self.busy < self.workers

    def note_busy(self, delta: int) -> None:
        with self._lock:
            self.busy += delta

    def note_received(self, count: int) -> None:
        with self._lock:
            self.received += count

    def retire(self) -> None:
        """One receiver found the queue empty; the run is drained when the last one has."""
        with self._lock:
            self.receivers -= 1
            if not self.receivers:
                self.drained.set()


@dataclass(eq=False, kw_only=True)
class Receiver:
    """What every receiver thread of one run does, over the worker's queue and in-flight set."""

    queue: SqsQueue
    hand_back_queue: SqsQueue  # hand-back is a visibility change (see QueueWorker)
    # The disposition's first look: those of the messages it settled as they came.
    on_received: Callable[[Sequence[QueueMessage]], Sequence[QueueMessage]]
    supervisor: Supervisor
    inflight: InFlight
    stats: Counters

    def loop(self, run: ReceiveRun) -> None:
        while not run.stop.is_set() and not run.drained.is_set():
            self.supervisor.beat()
            # Messages held now, or received by others meanwhile, may still become copies.
            seen, holding = run.received, len(self.inflight)
            asked, held = self._gather(run)
            if held:
                self._hand_on(run, held)
            elif asked:
                # --until-empty: this receiver is done once the queue answers it empty while
                # nothing is held and nobody received meanwhile (a held record may still become a
                # copy: a refresh, a retry). The others go on, so a copy made from a record one of
                # them is receiving right now is still received; the run drains with the last.
                if run.until_empty and not (holding or len(self.inflight)) and run.received == seen:
                    run.retire()
                    return
                if not run.wait_time:  # no long poll to wait in: do not spin on an empty queue
                    run.stop.wait(0.1)

    def _gather(self, run: ReceiveRun) -> tuple[bool, list[Held]]:
        """Receives until ``gather`` messages are held or one comes back short (the first
        long-polls, the others do not wait); whether the queue answered, and what is held."""
        held: list[Held] = []
        asked = False
        while len(held) < run.gather and not run.stop.is_set():
            most = min(run.per_receive, run.gather - len(held))
            # A slot freed one at a time must not become a receive of one (each receive is a
            # billed call) unless a worker would sit idle.
            wanted = run.capacity.take(
                most, timeout=0 if held else 0.5, starving=(lambda: True) if held else run.starving
            )
            if run.stop.is_set():  # came while waiting for a slot: no receive after a stop
                run.capacity.give(wanted)
                break
            wanted = run.reserve(wanted)
            if not wanted:
                break
            got = self._receive(run, wanted, wait_time=0 if held else run.wait_time, held=held)
            if got is None:  # failed, or stopped: not an answer that the queue is empty
                break
            asked = True
            held += got
            if len(got) < most:
                break
        return asked, held

    def _receive(
        self, run: ReceiveRun, wanted: int, *, wait_time: int, held: list[Held]
    ) -> list[Held] | None:
        """One receive of up to ``wanted``; None if it failed or a stop came during it."""
        try:
            batch = self.queue.receive(max_messages=wanted, wait_seconds=wait_time)
            # Their visibility runs from now, not from when a worker (or a refresh) gets to them:
            # the lease keeper's first extension is timed from here.
            received_at = time.monotonic()
        except EmailOpsError as exc:
            run.capacity.give(wanted)
            run.budget.give_back(wanted)
            self._receive_failed(exc)
            if not held:
                run.stop.wait(min(run.wait_time, 5) or 1)
            return None
        run.capacity.give(wanted - len(batch))
        run.budget.give_back(wanted - len(batch))
        if batch and run.stop.is_set():  # a stop came during the long poll: give it back now
            run.capacity.give(len(batch))
            hand_back(self.hand_back_queue, batch)
            return None
        self.stats.add(received=len(batch))
        # Held at once: if this thread dies below, they are handed back with the rest.
        got = [
            self.inflight.add(m, received_at=received_at, stopping=run.stop.is_set) for m in batch
        ]
        run.note_received(len(batch))  # after holding them: a receiver that sees no change
        return got

    def _hand_on(self, run: ReceiveRun, held: list[Held]) -> None:
        settled = {id(m) for m in self.on_received([h.message for h in held])}
        if settled:
            for h in held:
                if id(h.message) in settled:
                    self.inflight.remove(h.message)
            run.capacity.give(len(settled))
            held = [h for h in held if id(h.message) not in settled]
        if held and run.stop.is_set():  # a stop came meanwhile: give them back now
            hand_back(self.hand_back_queue, [h.message for h in held])
            for h in held:
                self.inflight.remove(h.message)
            run.capacity.give(len(held))
            return
        for start in range(0, len(held), run.per_call):
            run.work.put(held[start : start + run.per_call])

    def _receive_failed(self, exc: EmailOpsError) -> None:
        if isinstance(exc, ConfigurationFault):
            self.supervisor.health.fault_seen(exc.fix, exc.describe())
        else:
            EventLog(logger).warning("receive.failed", error=exc.describe())
