"""The one queue worker both consumers are built from: receivers feed a bounded set of worker
threads, which pass what they take to a *handler* and its outcomes to a *disposition policy*.

- Receivers (``receivers``) long-poll at once and take capacity slots first, so at most
  ``workers * per_call + prefetch`` messages are held whatever the queue depth. A receiver gathers
  up to ``gather`` messages (receives of ``per_receive`` back to back while they come back full;
  only the first long-polls) and hands them on in units of ``per_call``: 1 for email records, a
  whole gathered batch for SES events.
- The disposition sees every message first as it is received (``on_received``: the email
  consumer refreshes records near maxReceiveCount there), then each unit's outcomes (``settle``),
  or the unit alone if handling or settling it raised (``crashed``: the thread goes on).
- A stop stops receiving (nobody waits for a long poll: what it brings is handed back), hands back
  what no worker started (visible again at once), and lets started units finish within
  ``stop_timeout``; ``force`` does not wait. Units still running after that are handed back too
  when ``hand_back_unfinished`` (events: applying one twice is a no-op).
- Every thread, the consumer's companions too (lease keeper, stats, counters), runs under the
  ``Supervisor`` (``worker.queue_worker``): one that dies or hangs ends the run, all handed back.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from emailops.aws.sqs import QueueMessage, SqsQueue
from emailops.core.errors import ConfigurationFault, EmailOpsError
from emailops.core.events import EventLog, logfmt
from worker.inflight import Capacity, Held, InFlight
from worker.queue_worker import MessageBudget, Supervisor, hand_back
from worker.stats import Counters

__all__ = ["Companion", "Disposition", "Handler", "QueueWorker", "ReceiveRun", "WorkerSettings"]

logger = logging.getLogger("worker.queue_worker")
_DONE: list[Held] = []  # tells a worker thread to exit (compared by identity)
Outcome = TypeVar("Outcome")


class Handler(Protocol[Outcome]):
    def __call__(self, unit: Sequence[Held], /) -> Sequence[Outcome]:
        """One outcome per message of ``unit``, in order; trouble is an outcome, not a raise."""
        ...


class Disposition(Protocol[Outcome]):
    def on_received(self, messages: Sequence[QueueMessage]) -> Sequence[QueueMessage]:
        """Those of ``messages`` settled as they came (not to be handled); usually none."""
        ...

    def settle(self, messages: Sequence[QueueMessage], outcomes: Sequence[Outcome]) -> None:
        """Act on each message's outcome: delete, retry, wait, dead-letter."""
        ...

    def crashed(self, messages: Sequence[QueueMessage]) -> None:
        """Handling or settling ``messages`` raised (a bug): leave them to come back later."""
        ...


@dataclass(frozen=True)
class Companion:
    """A consumer's own long-lived thread, run (and watched) for as long as the workers: it
    gets an event set once every started unit is done, and must beat within ``hung_after``."""

    name: str
    target: Callable[[threading.Event], None]
    hung_after: float = 60.0


@dataclass(frozen=True, kw_only=True)
class WorkerSettings:
    receivers: int = 1
    workers: int = 1
    per_call: int = 1  # messages handed to the handler at once
    gather: int | None = None  # messages a receiver gathers before handing on (per_receive)
    prefetch: int | None = None  # messages held beyond the workers' (per_receive)
    stop_timeout: float = 25.0
    hung_seconds: float = 900.0  # a receiver or worker that has not beaten for this long is hung
    hand_back_unfinished: bool = False
    thread_prefix: str = ""  # "events-": events-receiver-0, events-worker-0


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


class QueueWorker(Generic[Outcome]):
    """Receive from ``queue``, run units through ``handler``, act through ``disposition``."""

    def __init__(
        self,
        *,
        queue: SqsQueue,
        handler: Handler[Outcome],
        disposition: Disposition[Outcome],
        settings: WorkerSettings,
        supervisor: Supervisor,
        stats: Counters,
        inflight: InFlight | None = None,
        hand_back_queue: SqsQueue | None = None,
        companions: Sequence[Companion] = (),
    ) -> None:
        self.queue = queue
        self.handler = handler
        self.disposition = disposition
        self.settings = settings
        self.supervisor = supervisor
        self.health = supervisor.health
        self.stats = stats
        self.inflight = inflight if inflight is not None else InFlight()
        # Hand-back is a visibility change: the email consumer's go through short timeouts.
        self.hand_back_queue = hand_back_queue or queue
        self.companions = tuple(companions)
        self.finished = True  # the last run's workers all returned (none left mid-unit)

    @property
    def failure(self) -> str:
        """The thread whose death (or hang) ended the last run, "" if none failed."""
        return self.supervisor.failure

    # --- the run -------------------------------------------------------------------------------

    def run(
        self,
        *,
        stop: threading.Event,
        force: threading.Event | None = None,
        until_empty: bool = False,
        max_messages: int | None = None,
        wait_time: int = 20,
        per_receive: int = 10,
    ) -> None:
        force, s = force or threading.Event(), self.settings
        prefetch = per_receive if s.prefetch is None else s.prefetch
        run = ReceiveRun(
            capacity=Capacity(s.workers * s.per_call + prefetch),
            work=queue.Queue(),
            budget=MessageBudget(max_messages),
            until_empty=until_empty,
            wait_time=wait_time,
            per_receive=per_receive,
            gather=s.gather or per_receive,
            per_call=s.per_call,
            stop=stop,
            receivers=s.receivers,
            workers=s.workers,
        )
        self.finished = False
        self.supervisor.start(stop)
        watch, prefix = self.supervisor.watch, s.thread_prefix
        receivers = [
            watch(self._receive_loop, run, name=f"{prefix}receiver-{i}", hung_after=s.hung_seconds)
            for i in range(s.receivers)
        ]
        workers = [
            watch(self._work_loop, run, name=f"{prefix}worker-{i}", hung_after=s.hung_seconds)
            for i in range(s.workers)
        ]
        companions_done = threading.Event()
        companions = [
            watch(c.target, companions_done, name=c.name, hung_after=c.hung_after)
            for c in self.companions
        ]
        try:
            # Receivers end when drained; on a stop, nobody waits for a long poll to come back.
            while any(t.is_alive() for t in receivers) and not (stop.is_set() or force.is_set()):
                receivers[0].join(0.2)
            for _ in workers:
                run.work.put(_DONE)
            deadline = math.inf  # drained: the workers finish what they hold, unless stopped
            while any(t.is_alive() for t in workers) and not force.is_set():
                if stop.is_set() and deadline == math.inf:  # a hang found now stops it too
                    deadline = time.monotonic() + s.stop_timeout
                if time.monotonic() > deadline:
                    EventLog(logger).warning(
                        "consumer.stop_timeout",
                        inFlight=len(self.inflight),
                        consequence="handed back at once"
                        if s.hand_back_unfinished
                        else "their claims end with their lease; the records reappear",
                    )
                    break
                workers[0].join(0.2)
            self.finished = not any(t.is_alive() for t in workers)
        finally:
            self._hand_back_at_end(run, len(workers))
            # Companions (the lease keeper) stop only now: every started unit has returned.
            companions_done.set()
            for thread in companions:
                thread.join(5)
            self.supervisor.close()

    def _hand_back_at_end(self, run: ReceiveRun, workers: int) -> None:
        """What no worker started goes back; started, too if a thread failed (or is still
        running, with ``hand_back_unfinished``)."""
        while True:  # not started: a late worker must not begin on them after this
            try:
                run.work.get_nowait()
            except queue.Empty:
                break
        for _ in range(workers):  # a worker still mid-unit exits when it is done
            run.work.put(_DONE)
        everything = bool(self.failure) or (
            not self.finished and self.settings.hand_back_unfinished
        )
        back = [h.message for h in self.inflight.snapshot() if everything or not h.started]
        hand_back(self.hand_back_queue, back)
        for message in back:
            self.inflight.remove(message)

    # --- receiving -----------------------------------------------------------------------------

    def _receive_loop(self, run: ReceiveRun) -> None:
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
        settled = {id(m) for m in self.disposition.on_received([h.message for h in held])}
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
            self.health.fault_seen(exc.fix, exc.describe())
        else:
            EventLog(logger).warning("receive.failed", error=exc.describe())

    # --- working -------------------------------------------------------------------------------

    def _work_loop(self, run: ReceiveRun) -> None:
        while True:
            self.supervisor.beat()  # idle, or done with a unit: a hang is one unit too long
            try:
                unit = run.work.get(timeout=1.0)
            except queue.Empty:
                continue
            if unit is _DONE:
                return
            messages = [h.message for h in unit]
            run.note_busy(1)
            try:
                if run.stop.is_set():  # checked between units too
                    hand_back(self.hand_back_queue, messages)
                else:
                    for h in unit:
                        h.started = True
                    self.handle(unit)
            except Exception:  # one unit's bug must not take the thread (and others) down
                logger.exception(
                    logfmt("record.crashed", sqsMessageId=messages[0].message_id, count=len(unit))
                )
                self.disposition.crashed(messages)
            finally:
                for message in messages:
                    self.inflight.remove(message)
                run.note_busy(-1)  # before the slots: a receiver woken by them sees it idle
                run.capacity.give(len(unit))

    def handle(self, unit: Sequence[Held]) -> list[Outcome]:
        """Run ``unit`` through the handler and settle its outcomes."""
        outcomes = list(self.handler(unit))
        # No more lease extensions: the disposition sets their visibility for good.
        for held in unit:
            self.inflight.remove(held.message)
        self.disposition.settle([h.message for h in unit], outcomes)
        return outcomes
