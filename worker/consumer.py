"""The consume loop: receivers feed a bounded set of worker threads; each record's outcome is acted
on as soon as it is known.

- A few receiver threads long-poll at once, so workers never sit idle behind one poll; they take
  capacity slots first, so at most ``concurrency + batch_size`` records are held.
- ``concurrency`` worker threads each run one record through the pipeline; records are isolated:
  one record's trouble, or a bug it triggers, touches no other.
- Retries are fresh copies carrying their RetryState (the retry budget, not the queue's
  maxReceiveCount, decides when to give up); a record near maxReceiveCount is refreshed the same
  way before SQS could dead-letter it without a reason.
- A stop stops receiving, hands back records not yet started (visible again at once), and lets
  started ones finish within ``stop_timeout``: sends under way complete, no new one starts (the
  record's other recipients are left to its next delivery); a second stop (``force``) does not wait.
- Every long-lived thread is watched: one that dies makes the consumer unhealthy, hand back what
  it holds and return with ``failure`` set, so the command exits non-zero and is restarted whole.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from emailops.aws.sqs import QueueMessage, SqsQueue
from emailops.core.errors import ConfigurationFault, EmailOpsError
from emailops.core.events import EventLog, logfmt
from emailops.core.pipeline import Action, EmailPipeline, RecordOutcome
from emailops.core.ports import Journal
from emailops.core.retry import RetryPolicy, RetryState
from worker.email_disposition import EmailDisposition, carried_state
from worker.inflight import Capacity, DeleteBatcher, Held, InFlight, LeaseKeeper
from worker.queue_worker import MessageBudget, ReceiveRun, Supervised, hand_back
from worker.stats import ConsumerStats, stats_line_fields

__all__ = ["Consumer", "ConsumerSettings", "ConsumerStats"]

logger = logging.getLogger("worker.consumer")
_DONE = object()  # tells a worker thread to exit


@dataclass(frozen=True)
class ConsumerSettings:
    concurrency: int = 16
    visibility_seconds: int = 30
    lease_seconds: int = 30
    dead_letter_url: str | None = None
    max_receive_count: int | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)  # RETRY_BACKOFF_*, RETRY_MAX_SECONDS
    stop_timeout: float = 25.0
    stats_every: float = 30.0
    # A watched thread that has not beaten for this long is reported hung (see queue_worker):
    # a worker on one record, a receiver on one receive; the lease keeper and stats tick faster.
    hung_seconds: float = 900.0


class Consumer(Supervised):
    def __init__(
        self,
        *,
        queue: SqsQueue,
        pipeline: EmailPipeline,
        settings: ConsumerSettings,
        lease_journal: Journal,
        clock: Callable[[], float] = time.time,
        lease_queue: SqsQueue | None = None,
    ) -> None:
        super().__init__()
        self.queue = queue
        # Visibility changes and lease extensions go through clients with short timeouts: a hung
        # call must not hold a lease, or a worker, for the shared clients' 30 s (x3).
        self.lease_queue = lease_queue or queue
        self.pipeline = pipeline
        self.settings = settings
        self.clock = clock
        self.stats = ConsumerStats()
        self.inflight = InFlight()
        self.deletes = DeleteBatcher(
            queue, on_deleted=lambda n: self.stats.add(deleted=n), on_died=self.supervisor.died
        )
        self.disposition = EmailDisposition(
            queue=queue,
            lease_queue=self.lease_queue,
            deletes=self.deletes,
            retry=settings.retry,
            dead_letter_url=settings.dead_letter_url,
            settle_accepted=pipeline.settle_accepted_sends,
            stats=self.stats,
            health=self.health,
            clock=clock,
        )
        self.keeper = LeaseKeeper(
            inflight=self.inflight,
            queue=self.lease_queue,
            journal=lease_journal,
            visibility_seconds=settings.visibility_seconds,
            lease_seconds=settings.lease_seconds,
            clock=clock,
        )

    # --- the loop ------------------------------------------------------------------------------

    def run(
        self,
        *,
        stop: threading.Event,
        force: threading.Event | None = None,
        until_empty: bool = False,
        max_messages: int | None = None,
        wait_time: int = 20,
        batch_size: int = 10,
    ) -> ConsumerStats:
        force = force or threading.Event()
        concurrency = max(1, self.settings.concurrency)
        receivers_wanted = max(1, min(4, math.ceil(concurrency / 8)))
        run = ReceiveRun(
            capacity=Capacity(concurrency + batch_size),
            work=queue.Queue(),
            budget=MessageBudget(max_messages),
            until_empty=until_empty,
            wait_time=wait_time,
            batch_size=batch_size,
            stop=stop,
            receivers=receivers_wanted,
        )
        self.supervisor.start(stop)
        watch, hung = self.supervisor.watch, self.settings.hung_seconds
        receivers = [
            watch(self._receive_loop, run, name=f"receiver-{i}", hung_after=hung)
            for i in range(receivers_wanted)
        ]
        workers = [
            watch(self._work_loop, run, name=f"worker-{i}", hung_after=hung)
            for i in range(concurrency)
        ]
        keeper_stop = threading.Event()
        ticking = max(60.0, 20 * self.keeper.tick)
        keeper = watch(self._keep_leases, keeper_stop, name="lease-keeper", hung_after=ticking)
        stats = watch(self._log_stats, keeper_stop, name="consumer-stats", hung_after=ticking)

        # Receivers end when drained; on a stop, nobody waits for a long poll to come back.
        while any(t.is_alive() for t in receivers) and not (stop.is_set() or force.is_set()):
            receivers[0].join(0.2)
        for _ in workers:
            run.work.put(_DONE)
        deadline = time.monotonic() + self.settings.stop_timeout if stop.is_set() else math.inf
        while any(t.is_alive() for t in workers) and not force.is_set():
            if time.monotonic() > deadline:
                EventLog(logger).warning(
                    "consumer.stop_timeout",
                    inFlight=len(self.inflight),
                    consequence="their claims end with their lease; the records reappear",
                )
                break
            workers[0].join(0.2)
        self._hand_back_unstarted(run)
        if self.failure:
            self._hand_back_held()
        # The keeper stops only now: every send that started has returned (or timed out above).
        keeper_stop.set()
        self.deletes.close()
        keeper.join(2)
        stats.join(1)
        self.keeper.close()
        self.supervisor.close()
        self.pipeline.flush_counters()
        return self.stats

    def _hand_back_held(self) -> None:
        """Make every record still held visible again at once (a dead thread's too)."""
        held = [h.message for h in self.inflight.snapshot()]
        hand_back(self.lease_queue, held)
        for message in held:
            self.inflight.remove(message)

    def _receive_loop(self, run: ReceiveRun) -> None:
        while not run.stop.is_set() and not run.drained.is_set():
            self.supervisor.beat()
            wanted = run.capacity.take(run.batch_size, timeout=0.5, starving=run.work.empty)
            wanted = run.reserve(wanted)
            if not wanted:
                continue
            # Records held now, or received by others meanwhile, may still become copies.
            seen, holding = run.received, len(self.inflight)
            try:
                batch = self.queue.receive(max_messages=wanted, wait_seconds=run.wait_time)
                # Their visibility runs from now, not from when a worker (or a refresh) gets to
                # them: the keeper's first extension is timed from here.
                received_at = time.monotonic()
            except EmailOpsError as exc:
                run.capacity.give(wanted)
                run.unreserve(wanted)
                self._receive_failed(exc)
                run.stop.wait(min(run.wait_time, 5) or 1)
                continue
            run.capacity.give(wanted - len(batch))
            run.unreserve(wanted - len(batch))
            self.stats.add(received=len(batch))
            # Held at once: if this thread dies below, the batch is handed back with the rest.
            held = [
                self.inflight.add(m, received_at=received_at, stopping=run.stop.is_set)
                for m in batch
            ]
            run.note_received(len(batch))  # after holding them: a receiver that sees no change
            # Near maxReceiveCount: refreshed at once, all together, not when a worker gets to
            # them: a consumer killed meanwhile would use up one more receive of each.
            worn = [h for h in held if self._near_max_receives(h.message)]
            refreshed = {id(h) for h in worn}
            if worn:
                self.disposition.refresh([h.message for h in worn])
                for h in worn:
                    self.inflight.remove(h.message)
                run.capacity.give(len(worn))
            for one in held:
                if id(one) in refreshed:
                    continue
                if run.stop.is_set():  # a stop came during the long poll: give it back now
                    self.disposition.hand_back_one(one.message)
                    self.inflight.remove(one.message)
                    run.capacity.give(1)
                else:
                    run.work.put(one)
            if not batch:
                # --until-empty: this receiver is done once the queue answers it empty while
                # nothing is held and nobody received meanwhile (a held record may still become a
                # copy: a refresh, a retry). The others go on, so a copy made from a record one of
                # them is receiving right now is still received; the run drains with the last.
                if run.until_empty and not (holding or len(self.inflight)) and run.received == seen:
                    run.retire()
                    return
                elif not run.wait_time:  # no long poll to wait in: do not spin on an empty queue
                    run.stop.wait(0.1)

    def _work_loop(self, run: ReceiveRun) -> None:
        while True:
            self.supervisor.beat()  # idle, or done with a record: a hang is one record too long
            try:
                held = run.work.get(timeout=1.0)
            except queue.Empty:
                continue
            if held is _DONE:
                return
            try:
                if run.stop.is_set():
                    self.disposition.hand_back_one(held.message)  # checked between records too
                else:
                    self.handle(held)
            except Exception:  # one record's bug must not take the thread (and others) down
                logger.exception(logfmt("record.crashed", sqsMessageId=held.message.message_id))
                self.disposition.crashed(held.message)
            finally:
                self.inflight.remove(held.message)
                run.capacity.give(1)

    def _keep_leases(self, stop: threading.Event) -> None:
        # Record trouble is handled inside (logged, tried again next tick); anything that escapes
        # is a bug, and a watched death beats leases silently left to lapse.
        while not stop.wait(self.keeper.tick):
            self.supervisor.beat()
            self.keeper.extend_due()

    def _log_stats(self, stop: threading.Event) -> None:
        last_stats, before = time.monotonic(), self.stats.copy()
        while not stop.wait(1.0):
            self.supervisor.beat()
            # Counts that a throttled write kept, or an idle consumer holds, go out within 1 s.
            self.pipeline.flush_counters()
            if time.monotonic() - last_stats < self.settings.stats_every:
                continue
            now = self.stats.copy()
            seconds = time.monotonic() - last_stats
            fields = stats_line_fields(now, before, seconds, len(self.inflight))
            EventLog(logger).info("consumer.stats", healthy=self.health.healthy, **fields)
            last_stats, before = time.monotonic(), now

    # --- one record ----------------------------------------------------------------------------

    def handle(self, held: Held) -> RecordOutcome:
        message = held.message
        state = carried_state(message)
        if state.dead_letter:  # decided before; only the move to the DLQ failed
            outcome = RecordOutcome(Action.DEAD_LETTER, reason=state.dead_letter, state=state)
        else:
            outcome = self._process(message, state, held)
        # No more lease extensions: the action below sets the record's visibility for good.
        self.inflight.remove(message)
        self.disposition.act(message, outcome)
        return outcome

    def _near_max_receives(self, message: QueueMessage) -> bool:
        """SQS dead-letters a record received maxReceiveCount times, with no reason: a record
        that came back that often (crashed consumers, waits) starts again as a fresh copy. Not
        one whose move to the DLQ failed: refreshing that forever would loop; SQS ends it."""
        most = self.settings.max_receive_count
        return (
            bool(most)
            and message.receive_count > 1
            and message.receive_count >= most - 1
            and not carried_state(message, quiet=True).dead_letter
        )

    def _process(self, message: QueueMessage, state: RetryState, held: Held) -> RecordOutcome:
        log = EventLog(logger, sqsMessageId=message.message_id, receiveCount=message.receive_count)
        started = time.perf_counter()
        try:
            outcome = self.pipeline.process(
                message.body, record_id=message.message_id, state=state, held=held.claims
            )
        except Exception as exc:  # a bug must not take other records down; retry this one
            logger.exception(logfmt("record.crashed", sqsMessageId=message.message_id))
            outcome = self._crashed(state, f"internal error: {type(exc).__name__}: {exc}")
        log.log(
            logging.INFO if outcome.action in (Action.DELETE, Action.WAIT) else logging.WARNING,
            "record.done",
            messageId=outcome.message_id or None,
            outcome=outcome.action.value,
            sent=outcome.sent,
            skipped=outcome.skipped,
            attempts=outcome.state.attempts or None,
            reason=outcome.reason or None,
            ms=round((time.perf_counter() - started) * 1000, 1),
        )
        self.stats.add(sent=outcome.sent, rate_wait_seconds=outcome.rate_wait)
        return outcome

    def _crashed(self, state: RetryState, reason: str) -> RecordOutcome:
        """A crash is retried like transient trouble, within the same budget (core.retry)."""
        state, exhausted = self.settings.retry.after_crash(
            state, now=int(self.clock()), reason=reason
        )
        if exhausted:
            return RecordOutcome(
                Action.DEAD_LETTER, reason=f"retry budget exhausted: {reason}", state=state
            )
        return RecordOutcome(Action.RETRY, reason=reason, state=state)

    def _hand_back_unstarted(self, run: ReceiveRun) -> None:
        while True:
            try:
                held = run.work.get_nowait()
            except queue.Empty:
                return
            if held is not _DONE:
                self.disposition.hand_back_one(held.message)
                self.inflight.remove(held.message)

    def _receive_failed(self, exc: EmailOpsError) -> None:
        if isinstance(exc, ConfigurationFault):
            self.health.fault_seen(exc.fix, exc.describe())
        else:
            EventLog(logger).warning("receive.failed", error=exc.describe())
