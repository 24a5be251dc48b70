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
  started ones finish within ``stop_timeout``; a second stop (``force``) does not wait.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from emailops.aws.sqs import OriginalKept, QueueMessage, SqsQueue
from emailops.core.errors import ConfigurationFault, EmailOpsError
from emailops.core.events import EventLog, logfmt
from emailops.core.pipeline import Action, EmailPipeline, RecordOutcome
from emailops.core.retry import STATE_ATTRIBUTE, RetryState, backoff_seconds
from worker.inflight import Capacity, DeleteBatcher, Held, InFlight, LeaseKeeper
from worker.stats import ConsumerStats, Health, stats_line_fields

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
    backoff_base: int = 30
    backoff_cap: int = 900
    stop_timeout: float = 25.0
    stats_every: float = 30.0


class Consumer:
    def __init__(
        self,
        *,
        queue: SqsQueue,
        pipeline: EmailPipeline,
        settings: ConsumerSettings,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.queue = queue
        self.pipeline = pipeline
        self.settings = settings
        self.clock = clock
        self.stats = ConsumerStats()
        self.health = Health()
        self.inflight = InFlight()
        self.deletes = DeleteBatcher(queue, on_deleted=lambda n: self.stats.add(deleted=n))
        self.keeper = LeaseKeeper(
            inflight=self.inflight,
            queue=queue,
            journal=pipeline.journal,
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
        run = _Run(
            capacity=Capacity(concurrency + batch_size),
            work=queue.Queue(),
            remaining=max_messages,
            until_empty=until_empty,
            wait_time=wait_time,
            batch_size=batch_size,
            stop=stop,
        )
        receivers = [
            _thread(self._receive_loop, run, name=f"receiver-{i}")
            for i in range(max(1, min(4, math.ceil(concurrency / 8))))
        ]
        workers = [_thread(self._work_loop, run, name=f"worker-{i}") for i in range(concurrency)]
        keeper_stop = threading.Event()
        keeper = _thread(self._keep_leases, keeper_stop, name="lease-keeper")

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
        keeper_stop.set()
        self.deletes.close()
        keeper.join(2)
        return self.stats

    def _receive_loop(self, run: _Run) -> None:
        while not run.stop.is_set() and not run.drained.is_set():
            wanted = run.capacity.take(run.batch_size, timeout=0.5)
            wanted = run.reserve(wanted)
            if not wanted:
                continue
            try:
                batch = self.queue.receive(max_messages=wanted, wait_seconds=run.wait_time)
            except EmailOpsError as exc:
                run.capacity.give(wanted)
                run.unreserve(wanted)
                self._receive_failed(exc)
                run.stop.wait(min(run.wait_time, 5) or 1)
                continue
            run.capacity.give(wanted - len(batch))
            run.unreserve(wanted - len(batch))
            self.stats.add(received=len(batch))
            # Near maxReceiveCount: refreshed at once, all together, not when a worker gets to
            # them: a consumer killed meanwhile would use up one more receive of each.
            worn = [m for m in batch if self._near_max_receives(m)]
            if worn:
                self._refresh(worn)
                run.capacity.give(len(worn))
            for message in batch:
                if message in worn:
                    continue
                if run.stop.is_set():  # a stop came during the long poll: give it back now
                    self._hand_back(message)
                    run.capacity.give(1)
                else:
                    run.work.put(self.inflight.add(message))
            if not batch:
                if run.until_empty and not len(self.inflight):
                    # Other receivers may still hand in what they got; workers finish all of it.
                    run.drained.set()
                elif not run.wait_time:  # no long poll to wait in: do not spin on an empty queue
                    run.stop.wait(0.1)

    def _work_loop(self, run: _Run) -> None:
        while True:
            held = run.work.get()
            if held is _DONE:
                return
            try:
                if run.stop.is_set():
                    self._hand_back(held.message)  # a stop is checked between records too
                else:
                    self.handle(held)
            finally:
                self.inflight.remove(held.message)
                run.capacity.give(1)

    def _keep_leases(self, stop: threading.Event) -> None:
        last_stats, before = time.monotonic(), self.stats.copy()
        while not stop.wait(self.keeper.tick):
            try:
                self.keeper.extend_due()
            except Exception:  # the keeper must outlive any one record's trouble
                logger.exception(logfmt("lease.keeper_crashed"))
            if time.monotonic() - last_stats >= self.settings.stats_every:
                now = self.stats.copy()
                seconds = time.monotonic() - last_stats
                fields = stats_line_fields(now, before, seconds, len(self.inflight))
                EventLog(logger).info("consumer.stats", healthy=self.health.healthy, **fields)
                last_stats, before = time.monotonic(), now

    # --- one record ----------------------------------------------------------------------------

    def handle(self, held: Held) -> RecordOutcome:
        message = held.message
        state = RetryState.from_json(message.string_attribute(STATE_ATTRIBUTE))
        outcome = self._process(message, state, held)
        # No more lease extensions: the action below sets the record's visibility for good.
        self.inflight.remove(message)
        self._act(message, outcome)
        return outcome

    def _refresh(self, messages: list[QueueMessage]) -> None:
        """Fresh copies, in one call (a per-record fallback if the batch call fails)."""
        carried = [
            (
                m,
                {
                    STATE_ATTRIBUTE: RetryState.from_json(
                        m.string_attribute(STATE_ATTRIBUTE)
                    ).to_json()
                },
            )
            for m in messages
        ]
        try:
            left = set(self.queue.requeue_now(carried))
        except EmailOpsError as exc:
            EventLog(logger).warning(
                "refresh.batch_failed", count=len(messages), error=exc.describe()
            )
            left = {m.message_id for m in messages}
        for message, _ in carried:
            if message.message_id in left:
                state = RetryState.from_json(message.string_attribute(STATE_ATTRIBUTE))
                self._requeue(message, 0, state, reason="receive count near maxReceiveCount")
            else:
                EventLog(logger, sqsMessageId=message.message_id).info(
                    "record.refreshed", receiveCount=message.receive_count
                )
        self.stats.add(refreshed=len(messages))

    def _near_max_receives(self, message: QueueMessage) -> bool:
        """SQS dead-letters a record received maxReceiveCount times, with no reason: a record
        that came back that often (crashed consumers, waits) starts again as a fresh copy."""
        most = self.settings.max_receive_count
        return bool(most) and message.receive_count > 1 and message.receive_count >= most - 1

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
        """A crash is retried like transient trouble, within the same budget."""
        now = int(self.clock())
        state = state.after_failure(now=now, started_at=now, error=reason, accepted=state.accepted)
        if state.elapsed(now) >= self.pipeline.settings.retry_max_seconds:
            return RecordOutcome(
                Action.DEAD_LETTER, reason=f"retry budget exhausted: {reason}", state=state
            )
        return RecordOutcome(Action.RETRY, reason=reason, state=state)

    def _act(self, message: QueueMessage, outcome: RecordOutcome) -> None:
        log = EventLog(logger, sqsMessageId=message.message_id, messageId=outcome.message_id)
        if outcome.action is Action.DELETE:
            self.health.record_done()
            self.deletes.add(message)
        elif outcome.action is Action.RETRY:
            self.stats.add(retried=1)
            delay = backoff_seconds(
                outcome.state.attempts,
                base=self.settings.backoff_base,
                cap=self.settings.backoff_cap,
            )
            self._requeue(message, delay, outcome.state, reason=outcome.reason)
        elif outcome.action is Action.WAIT:
            self.stats.add(waiting=1)
            if outcome.fault:
                self.health.fault_seen(outcome.fault, outcome.reason)
            self._set_visibility(message, int(outcome.wait_until - self.clock()) + 1, log)
        elif self.settings.dead_letter_url:
            self.stats.add(dead_lettered=1)
            try:
                self.queue.dead_letter(
                    message,
                    self.settings.dead_letter_url,
                    outcome.reason,
                    carried={STATE_ATTRIBUTE: outcome.state.to_json()},
                )
            except EmailOpsError as exc:
                log.warning("dead_letter.failed", error=exc.describe())
        else:  # only with --allow-no-dead-letter-queue
            log.error("dead_letter.unavailable", reason=outcome.reason)
            self._set_visibility(message, self.settings.backoff_cap, log)

    def _requeue(self, message: QueueMessage, delay: int, state: RetryState, reason: str) -> None:
        """A fresh copy carrying ``state``. When no copy can carry it, the original stays without
        it: the sends SES accepted are marked in the journal now instead (they must never be sent
        again), and a record too large ever to carry its state is dead-lettered, since its retry
        budget could never advance."""
        log = EventLog(logger, sqsMessageId=message.message_id)
        try:
            self.queue.requeue(
                message, delay_seconds=delay, carried={STATE_ATTRIBUTE: state.to_json()}
            )
            log.info("record.requeued", seconds=delay, attempts=state.attempts, reason=reason)
            return
        except OriginalKept as exc:  # the copy carries the state; the original waits 12 h
            log.error("requeue.original_kept", error=exc.describe())
            return
        except EmailOpsError as exc:
            error = exc
        state = self.pipeline.settle_accepted(state, log)
        if error.permanent and self.settings.dead_letter_url:
            log.error("requeue.impossible", error=error.describe(), consequence="dead-lettered")
            self._act(
                message,
                RecordOutcome(
                    Action.DEAD_LETTER,
                    reason=f"cannot be retried: {error.describe()}; last error: {reason}",
                    state=state,
                ),
            )
            return
        # The original stays: it reappears after its back-off, or, for a refresh, after its
        # visibility timeout (not at once: each receive counts).
        log.warning("requeue.failed", error=error.describe(), accepted=len(state.accepted))
        if delay:
            self._set_visibility(message, delay, log)

    def _set_visibility(self, message: QueueMessage, seconds: int, log: EventLog) -> None:
        try:
            self.queue.change_visibility(message, seconds)
        except EmailOpsError as exc:
            # Without the change the record simply reappears after the visibility timeout.
            log.warning("visibility.failed", seconds=seconds, error=exc.describe())

    def _hand_back(self, message: QueueMessage) -> None:
        self._set_visibility(message, 0, EventLog(logger, sqsMessageId=message.message_id))

    def _hand_back_unstarted(self, run: _Run) -> None:
        while True:
            try:
                held = run.work.get_nowait()
            except queue.Empty:
                return
            if held is not _DONE:
                self._hand_back(held.message)
                self.inflight.remove(held.message)

    def _receive_failed(self, exc: EmailOpsError) -> None:
        if isinstance(exc, ConfigurationFault):
            self.health.fault_seen(exc.fix, exc.describe())
        else:
            EventLog(logger).warning("receive.failed", error=exc.describe())


class _Run:
    """One run's shared bookkeeping: the work queue, the message budget, whether it drained."""

    def __init__(
        self,
        *,
        capacity: Capacity,
        work: queue.Queue,
        remaining: int | None,
        until_empty: bool,
        wait_time: int,
        batch_size: int,
        stop: threading.Event,
    ) -> None:
        self.capacity = capacity
        self.work = work
        self.remaining = remaining
        self.until_empty = until_empty
        self.wait_time = wait_time
        self.batch_size = batch_size
        self.stop = stop
        self.drained = threading.Event()
        self._lock = threading.Lock()

    def reserve(self, wanted: int) -> int:
        """Limit a receive to what --max-messages still allows; drained once it allows none."""
        with self._lock:
            if self.remaining is None or not wanted:
                return wanted
            allowed = min(wanted, self.remaining)
            self.remaining -= allowed
        if allowed < wanted:
            self.capacity.give(wanted - allowed)
        if not allowed:
            self.drained.set()
        return allowed

    def unreserve(self, count: int) -> None:
        with self._lock:
            if self.remaining is not None:
                self.remaining += count


def _thread(target: Callable[..., None], *args: object, name: str) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
    thread.start()
    return thread
