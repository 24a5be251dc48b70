"""The email consumer: the queue worker (``worker.queue_loop.QueueWorker``) with the pipeline as
its handler, one record at a time, and ``EmailDisposition`` as its disposition policy.

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
- Every long-lived thread is watched, the lease keeper and the stats line too (companions of the
  worker): one that dies or hangs makes the consumer unhealthy, hand back what it holds and
  return with ``failure`` set, so the command exits non-zero and is restarted whole.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from emailops.aws.sqs import QueueMessage, SqsQueue
from emailops.core.events import EventLog, logfmt
from emailops.core.pipeline import Action, EmailPipeline, RecordOutcome
from emailops.core.ports import Journal
from emailops.core.retry import RetryPolicy, RetryState
from emailops.core.state_seal import StateSeal
from worker.email_disposition import EmailDisposition, carried_state
from worker.inflight import DeleteBatcher, Held, InFlight, LeaseKeeper
from worker.queue_loop import Companion, QueueWorker, WorkerSettings
from worker.queue_worker import Supervised
from worker.stats import ConsumerStats, stats_line_fields

__all__ = ["Consumer", "ConsumerSettings", "ConsumerStats"]

logger = logging.getLogger("worker.consumer")


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
        seal: StateSeal,
        lease_queue: SqsQueue | None = None,
    ) -> None:
        """``seal``: what proves the state on a message is ours (emailops.queue_state)."""
        super().__init__()
        self.queue = queue
        # Visibility changes and lease extensions go through clients with short timeouts: a hung
        # call must not hold a lease, or a worker, for the shared clients' 30 s (x3).
        self.lease_queue = lease_queue or queue
        self.pipeline = pipeline
        self.settings = settings
        self.clock = clock
        self.stats = ConsumerStats()
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
            seal=seal,
            max_receive_count=settings.max_receive_count,
        )
        inflight = InFlight()
        self.keeper = LeaseKeeper(
            inflight=inflight,
            queue=self.lease_queue,
            journal=lease_journal,
            visibility_seconds=settings.visibility_seconds,
            lease_seconds=settings.lease_seconds,
            clock=clock,
        )
        concurrency = max(1, settings.concurrency)
        ticking = max(60.0, 20 * self.keeper.tick)
        self.worker: QueueWorker[RecordOutcome] = QueueWorker(
            queue=queue,
            handler=self.process,
            disposition=self.disposition,
            settings=WorkerSettings(
                receivers=max(1, min(4, math.ceil(concurrency / 8))),
                workers=concurrency,
                per_call=1,
                stop_timeout=settings.stop_timeout,
                hung_seconds=settings.hung_seconds,
            ),
            supervisor=self.supervisor,
            stats=self.stats,
            inflight=inflight,
            hand_back_queue=self.lease_queue,
            companions=[
                Companion("lease-keeper", self._keep_leases, ticking),
                Companion("consumer-stats", self._log_stats, ticking),
            ],
        )

    @property
    def inflight(self) -> InFlight:
        return self.worker.inflight

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
        try:
            self.worker.run(
                stop=stop,
                force=force,
                until_empty=until_empty,
                max_messages=max_messages,
                wait_time=wait_time,
                per_receive=batch_size,
            )
        finally:
            self.deletes.close()
            self.keeper.close()
            self.pipeline.flush_counters(stopping=True)
        return self.stats

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
        """One record through the pipeline and the disposition, as a worker thread runs it."""
        return self.worker.handle([held])[0]

    def process(self, unit: Sequence[Held]) -> list[RecordOutcome]:
        """The queue worker's handler: each record's outcome (units are of one record)."""
        outcomes = []
        for held in unit:
            state = carried_state(held.message, self.disposition.seal)
            if state.dead_letter:  # decided before; only the move to the DLQ failed
                outcome = RecordOutcome(Action.DEAD_LETTER, reason=state.dead_letter, state=state)
            else:
                outcome = self._process(held.message, state, held)
            outcomes.append(outcome)
        return outcomes

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
