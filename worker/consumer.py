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
from dataclasses import dataclass, replace

from emailops.aws.sqs import OriginalKept, QueueMessage, SqsQueue
from emailops.core.errors import ConfigurationFault, EmailOpsError
from emailops.core.events import EventLog, logfmt
from emailops.core.pipeline import Action, EmailPipeline, RecordOutcome
from emailops.core.ports import Journal
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
        lease_queue: SqsQueue | None = None,
        lease_journal: Journal | None = None,
    ) -> None:
        self.queue = queue
        # Visibility changes and lease extensions go through clients with short timeouts: a hung
        # call must not hold a lease, or a worker, for the shared clients' 30 s (x3).
        self.lease_queue = lease_queue or queue
        self.pipeline = pipeline
        self.settings = settings
        self.clock = clock
        self.stats = ConsumerStats()
        self.health = Health()
        self.failure = ""  # the thread whose death ended the last run, "" if none died
        self._stop: threading.Event | None = None
        self.inflight = InFlight()
        self.deletes = DeleteBatcher(
            queue, on_deleted=lambda n: self.stats.add(deleted=n), on_died=self._thread_died
        )
        self.keeper = LeaseKeeper(
            inflight=self.inflight,
            queue=self.lease_queue,
            journal=lease_journal or pipeline.journal,
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
        run = _Run(
            capacity=Capacity(concurrency + batch_size),
            work=queue.Queue(),
            remaining=max_messages,
            until_empty=until_empty,
            wait_time=wait_time,
            batch_size=batch_size,
            stop=stop,
            receivers=receivers_wanted,
        )
        self.failure, self._stop = "", stop
        receivers = [
            self._watched(self._receive_loop, run, name=f"receiver-{i}")
            for i in range(receivers_wanted)
        ]
        workers = [
            self._watched(self._work_loop, run, name=f"worker-{i}") for i in range(concurrency)
        ]
        keeper_stop = threading.Event()
        keeper = self._watched(self._keep_leases, keeper_stop, name="lease-keeper")
        stats = self._watched(self._log_stats, keeper_stop, name="consumer-stats")

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
        self._flush_counters()
        return self.stats

    def _flush_counters(self) -> None:
        if self.pipeline.stats is not None:
            self.pipeline.stats.flush()

    def _watched(self, target: Callable[..., None], *args: object, name: str) -> threading.Thread:
        def guarded() -> None:
            try:
                target(*args)
            except BaseException as exc:
                self._thread_died(name, exc)

        return _thread(guarded, name=name)

    def _thread_died(self, name: str, exc: BaseException) -> None:
        """No silent gaps: a dead thread stops the whole consumer (see the module doc)."""
        logger.error(
            logfmt(
                "consumer.thread_died",
                thread=name,
                error=f"{type(exc).__name__}: {exc}",
                consequence="handing back held records and exiting non-zero",
            ),
            exc_info=exc,
        )
        self.health.thread_died(name)
        self.failure = self.failure or name
        if self._stop is not None:
            self._stop.set()

    def _hand_back_held(self) -> None:
        """Make every record still held visible again at once (a dead thread's too)."""
        held = [h.message for h in self.inflight.snapshot()]
        for start in range(0, len(held), 10):
            try:
                self.lease_queue.release(held[start : start + 10])
            except EmailOpsError as exc:
                EventLog(logger).warning(
                    "consumer.hand_back_failed",
                    count=len(held[start : start + 10]),
                    error=exc.describe(),
                )
        for message in held:
            self.inflight.remove(message)

    def _receive_loop(self, run: _Run) -> None:
        while not run.stop.is_set() and not run.drained.is_set():
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
                self._refresh([h.message for h in worn])
                for h in worn:
                    self.inflight.remove(h.message)
                run.capacity.give(len(worn))
            for one in held:
                if id(one) in refreshed:
                    continue
                if run.stop.is_set():  # a stop came during the long poll: give it back now
                    self._hand_back(one.message)
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
            except Exception:  # one record's bug must not take the thread (and others) down
                logger.exception(logfmt("record.crashed", sqsMessageId=held.message.message_id))
                self._set_visibility(
                    held.message,
                    self.settings.backoff_base,
                    EventLog(logger, sqsMessageId=held.message.message_id),
                )
            finally:
                self.inflight.remove(held.message)
                run.capacity.give(1)

    def _keep_leases(self, stop: threading.Event) -> None:
        # Record trouble is handled inside (logged, tried again next tick); anything that escapes
        # is a bug, and a watched death beats leases silently left to lapse.
        while not stop.wait(self.keeper.tick):
            self.keeper.extend_due()

    def _log_stats(self, stop: threading.Event) -> None:
        last_stats, before = time.monotonic(), self.stats.copy()
        while not stop.wait(1.0):
            # Counts that a throttled write kept, or an idle consumer holds, go out within 1 s.
            self._flush_counters()
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
        state = self._state(message)
        if state.dead_letter:  # decided before; only the move to the DLQ failed
            outcome = RecordOutcome(Action.DEAD_LETTER, reason=state.dead_letter, state=state)
        else:
            outcome = self._process(message, state, held)
        # No more lease extensions: the action below sets the record's visibility for good.
        self.inflight.remove(message)
        self._act(message, outcome)
        return outcome

    def _refresh(self, messages: list[QueueMessage]) -> None:
        """Fresh copies, in one call (a per-record fallback if the batch call fails)."""
        carried = [(m, {STATE_ATTRIBUTE: self._state(m).to_json()}) for m in messages]
        try:
            left = set(self.queue.requeue_now(carried))
        except EmailOpsError as exc:
            EventLog(logger).warning(
                "refresh.batch_failed", count=len(messages), error=exc.describe()
            )
            left = {m.message_id for m in messages}
        for message, _ in carried:
            if message.message_id in left:
                state = self._state(message)
                self._requeue(message, 0, state, reason="receive count near maxReceiveCount")
            else:
                EventLog(logger, sqsMessageId=message.message_id).info(
                    "record.refreshed", receiveCount=message.receive_count
                )
        self.stats.add(refreshed=len(messages))

    def _near_max_receives(self, message: QueueMessage) -> bool:
        """SQS dead-letters a record received maxReceiveCount times, with no reason: a record
        that came back that often (crashed consumers, waits) starts again as a fresh copy. Not
        one whose move to the DLQ failed: refreshing that forever would loop; SQS ends it."""
        most = self.settings.max_receive_count
        return (
            bool(most)
            and message.receive_count > 1
            and message.receive_count >= most - 1
            and not self._state(message, quiet=True).dead_letter
        )

    def _state(self, message: QueueMessage, *, quiet: bool = False) -> RetryState:
        """The carried RetryState; an unreadable one is a fresh state (the journal still guards
        every recipient), never a reason to stall."""
        state, problem = RetryState.parse(message.string_attribute(STATE_ATTRIBUTE))
        if problem and not quiet:
            EventLog(logger, sqsMessageId=message.message_id).warning(
                "record.state_unreadable", reason=problem, consequence="processed as a fresh record"
            )
        return state

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
                self._dead_letter_failed(message, outcome)
        else:  # only with --allow-no-dead-letter-queue
            log.error("dead_letter.unavailable", reason=outcome.reason)
            self._set_visibility(message, self.settings.backoff_cap, log)

    def _dead_letter_failed(self, message: QueueMessage, outcome: RecordOutcome) -> None:
        """Remember the decision on a copy, so the record is not processed (or refreshed) again:
        the next delivery tries the move only, and if that keeps failing, SQS's own redrive
        (maxReceiveCount) ends it."""
        delay = self.settings.backoff_base
        if outcome.state.dead_letter:
            log = EventLog(logger, sqsMessageId=message.message_id)
            self._set_visibility(message, delay, log)
            return
        marked = replace(outcome.state, dead_letter=outcome.reason[:4000] or "dead-lettered")
        self._requeue(message, delay, marked, reason="dead-letter move failed")

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
        state = self.pipeline.settle_accepted(state, log, body=message.body)
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
            self.lease_queue.change_visibility(message, seconds)
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
        receivers: int,
    ) -> None:
        self.capacity = capacity
        self.work = work
        self.remaining = remaining
        self.until_empty = until_empty
        self.wait_time = wait_time
        self.batch_size = batch_size
        self.stop = stop
        self.drained = threading.Event()
        self.received = 0  # records received so far, by every receiver
        self.receivers = receivers  # still receiving (--until-empty retires them one by one)
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

    def note_received(self, count: int) -> None:
        with self._lock:
            self.received += count

    def retire(self) -> None:
        """One receiver found the queue empty; the run is drained when the last one has."""
        with self._lock:
            self.receivers -= 1
            if not self.receivers:
                self.drained.set()

    def unreserve(self, count: int) -> None:
        with self._lock:
            if self.remaining is not None:
                self.remaining += count


def _thread(target: Callable[..., None], *args: object, name: str) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
    thread.start()
    return thread
