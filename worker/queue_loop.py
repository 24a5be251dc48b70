"""The one queue worker both consumers are built from: receivers feed a bounded set of worker
threads, which pass what they take to a *handler* and its outcomes to a *disposition policy*.

- Receivers (``receivers``; ``worker.queue_receiver``) long-poll at once and take capacity slots
  first, so at most ``workers * per_call + prefetch`` messages are held whatever the queue depth.
  A receiver gathers up to ``gather`` messages (receives of ``per_receive`` back to back while they
  come back full; only the first long-polls) and hands them on in units of ``per_call``: 1 for
  email records, a whole gathered batch for SES events.
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
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from emailops.aws.sqs import QueueMessage, SqsQueue
from emailops.core.events import EventLog, logfmt
from worker.inflight import Capacity, Held, InFlight
from worker.queue_receiver import Receiver, ReceiveRun
from worker.queue_worker import MessageBudget, Supervisor, hand_back
from worker.stats import Counters

__all__ = ["Companion", "Disposition", "Handler", "QueueWorker", "WorkerSettings"]

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
        receiver = Receiver(
            queue=self.queue,
            hand_back_queue=self.hand_back_queue,
            on_received=self.disposition.on_received,
            supervisor=self.supervisor,
            inflight=self.inflight,
            stats=self.stats,
        )
        receivers = [
            watch(receiver.loop, run, name=f"{prefix}receiver-{i}", hung_after=s.hung_seconds)
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
