"""The SES events consumer: the queue worker (``worker.queue_loop.QueueWorker``) with the
delivery-event handler as its handler, a gathered batch at a time, and ``EventsDisposition`` as its
disposition policy (delete, retry after a back-off, dead-letter).

Messages are gathered in batches (``batch_size``: receives of 10 back to back while the queue
gives full ones) and handed to the handler as one batch: the rows the events name are read in one
BatchGetItem, and one email's events are applied in ONE conditional write on its row
(``DeliveryEventCount`` as the version, the timeline's event ids for dedupe, ``DeliveryOrder`` so
a late Delivery never overwrites a Bounce), retried on a lost race. With ``concurrency`` > 1
(SES_EVENTS_CONCURRENCY) one receiver and one worker run per 10 handlers, and each batch's emails
are handled on a shared pool, one email's events on one thread: SES sends 2-4 events per email, so
this consumer must keep up with a multiple of the send rate. See docs/delivery-events.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from emailops.aws.sqs import QueueMessage, SqsQueue
from emailops.capabilities import WEBHOOKS, report_off
from emailops.core.delivery_handler import DeliveryEventHandler, EventAction, EventOutcome
from emailops.core.events import EventLog, logfmt
from emailops.core.retry import RetryPolicy
from worker.events_disposition import EventsDisposition
from worker.inflight import Held
from worker.queue_loop import Companion, QueueWorker, WorkerSettings
from worker.queue_worker import Supervised
from worker.stats import EventsStats
from worker.wiring import retry_policy

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = ["EventsConsumer", "EventsStats", "build_events_consumer"]

logger = logging.getLogger("worker.events_consumer")


class EventsConsumer(Supervised):
    def __init__(
        self,
        *,
        queue: SqsQueue,
        handler: DeliveryEventHandler,
        dead_letter_url: str | None,
        concurrency: int = 1,
        batch_size: int | None = None,
        retry: RetryPolicy | None = None,
        hung_seconds: float = 900.0,
        stop_timeout: float = 8.0,
    ) -> None:
        super().__init__()
        self.queue = queue
        self.handler = handler
        self.retry = retry or RetryPolicy()  # RETRY_BACKOFF_*: how long a retried event waits
        self.stats = EventsStats()
        self.concurrency = max(1, concurrency)
        # Messages gathered per batch (receives of 10 back to back while the queue gives full
        # ones): about one per pool thread. More would merge a few more of one email's events
        # into one write, but every message held is one more the queue (and moto's receive,
        # which scans them all per returned message) carries in flight.
        self.batch_size = batch_size or min(100, 10 * -(-self.concurrency // 10))
        self.disposition = EventsDisposition(
            queue=queue,
            dead_letter_url=dead_letter_url,
            retry=self.retry,
            stats=self.stats,
            health=self.health,
        )
        # Counters are written every STATS_FLUSH_SECONDS when events come; the flusher writes
        # what an idle consumer still holds within a second, and the rest when it stops.
        self.counters = getattr(handler, "stats", None)  # a test's handler may have none
        flusher = Companion("events-counters", self._flush_every_second, 60.0)
        loops = max(1, -(-self.concurrency // 10))  # a receiver and a worker per 10 handlers
        self.worker: QueueWorker[EventOutcome] = QueueWorker(
            queue=queue,
            handler=self.handle_batch,
            disposition=self.disposition,
            settings=WorkerSettings(
                receivers=loops,
                workers=loops,
                per_call=self.batch_size,
                gather=self.batch_size,
                # Each worker with a batch in hand while its next is gathered: capacity shared
                # with no prefetch let a busy worker's neighbour gather only part batches (more
                # BatchGetItems, fewer events merged per write).
                prefetch=loops * self.batch_size,
                # On a stop, how long the workers may take to finish their batch (Docker: 10 s);
                # what is still running then is handed back (applying it twice is a no-op).
                stop_timeout=stop_timeout,
                hung_seconds=hung_seconds,
                hand_back_unfinished=True,
                thread_prefix="events-",
            ),
            supervisor=self.supervisor,
            stats=self.stats,
            companions=[flusher] if self.counters is not None else [],
        )
        self._pool: ThreadPoolExecutor | None = None

    @property
    def dead_letter_url(self) -> str | None:
        return self.disposition.dead_letter_url

    def run(
        self,
        *,
        stop: threading.Event,
        until_empty: bool = False,
        max_messages: int | None = None,
        wait_time: int = 20,
    ) -> EventsStats:
        """Returns when the receivers drained, a stop came, or a thread failed."""
        if self.concurrency > 1:
            self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="event")
        try:
            self.worker.run(
                stop=stop, until_empty=until_empty, max_messages=max_messages, wait_time=wait_time
            )
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=self.worker.finished, cancel_futures=True)
                self._pool = None
            if self.counters is not None:
                self.counters.flush()
        return self.stats

    def _flush_every_second(self, stop: threading.Event) -> None:
        while not stop.wait(1.0):
            self.supervisor.beat()
            try:  # a failed write keeps its counts (BufferedStats); a bug must not end this
                self.counters.flush()
            except Exception:
                logger.exception(logfmt("stats.flush_crashed", retry="in a second"))

    def handle_batch(self, unit: Sequence[Held]) -> list[EventOutcome]:
        """The queue worker's handler: one email's events in one task (one journal write),
        emails' tasks on the pool."""
        batch = [held.message for held in unit]
        started = time.perf_counter()
        pool = self._pool
        try:
            outcomes = list(
                self.handler.handle_batch(
                    [(message.body, message.receive_count) for message in batch],
                    run=pool.map if pool is not None else map,
                )
            )
        except Exception as exc:  # a bug must not take the worker down; SQS will redeliver
            logger.exception(logfmt("batch.crashed", count=len(batch)))
            outcomes = [
                EventOutcome(EventAction.RETRY, reason=f"internal error: {exc!r}") for _ in batch
            ]
        ms = round((time.perf_counter() - started) * 1000, 1)
        for message, outcome in zip(batch, outcomes, strict=True):
            self._log(message, outcome, ms)
        return outcomes

    @staticmethod
    def _log(message: QueueMessage, outcome: EventOutcome, batch_ms: float) -> None:
        EventLog(logger).log(
            logging.INFO if outcome.action is EventAction.DELETE else logging.WARNING,
            "event.done",
            sqsMessageId=message.message_id,
            receiveCount=message.receive_count,
            eventType=outcome.event.raw_type if outcome.event else None,
            outcome=outcome.action.value,
            result=outcome.result or None,
            reason=outcome.reason or None,
            batchMs=batch_ms,
        )


def build_events_consumer(*, adapters: Container, concurrency: int | None = None) -> EventsConsumer:
    """Check settings, read the events queue's DLQ once, and wire the handler (on ``adapters``,
    or, with more than one thread, on a container of its config with a connection per thread:
    the process's container is left as it was)."""
    config = adapters.config
    config.check_events()
    if concurrency is None:
        concurrency = config.events.concurrency
    built = adapters
    if concurrency > 1:  # one pooled connection per handler thread and receive loop
        built = adapters.with_connections(concurrency + 8)
    verifier = built.sns_verifier
    queue = built.events_queue
    info = queue.describe()
    log = EventLog(logger)
    if info.dead_letter_url is None:
        log.warning(
            "queue.no_dead_letter_queue",
            queue=queue.url,
            consequence="unreadable events are retried until they expire",
        )
    log.info(
        "events_consumer.configured",
        queue=queue.url,
        deadLetterQueue=info.dead_letter_url,
        verifySignatures=verifier.verify_signatures,
        rawDelivery=verifier.raw_delivery,
        maxAgeSeconds=verifier.max_age_seconds if verifier.verify_signatures else None,
        allowedTopics=",".join(sorted(verifier.allowed_topics)) or "any",
        concurrency=concurrency,
    )
    report_off(config, WEBHOOKS, process="events_consumer")
    return EventsConsumer(
        queue=queue,
        handler=built.delivery_event_handler,
        dead_letter_url=info.dead_letter_url,
        concurrency=concurrency,
        retry=retry_policy(config),
    )
