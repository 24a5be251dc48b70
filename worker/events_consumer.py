"""The SES events loop: receive a batch from ``SES_EVENTS_QUEUE_URL``, hand each message to the
delivery-event handler, act on the outcome.

Applied, duplicate and stored events are deleted (batched); transient trouble leaves the message for
redelivery after a back-off; a message we cannot trust or read goes to the queue's dead-letter
queue with a ``FailureReason``.

Messages are gathered in batches (``batch_size``: receives of 10 back to back while the queue
gives full ones) and handed to the handler as one batch: the rows the events name are read in one
BatchGetItem, and one email's events are applied in ONE conditional write on its row
(``DeliveryEventCount`` as the version, the timeline's event ids for dedupe, ``DeliveryOrder`` so
a late Delivery never overwrites a Bounce), retried on a lost race. With ``concurrency`` > 1
(SES_EVENTS_CONCURRENCY) several receive loops run at once and each batch's emails are handled on
a shared pool, one email's events on one thread: SES sends 2-4 events per email, so this loop must
keep up with a multiple of the send rate. See docs/delivery-events.md.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.conf import settings

from emailops import container
from emailops.aws.clients import size_connection_pools
from emailops.aws.sqs import QueueMessage, SqsQueue
from emailops.core.delivery_handler import DeliveryEventHandler, EventAction, EventOutcome
from emailops.core.errors import EmailOpsError
from emailops.core.events import EventLog, logfmt
from emailops.core.retry import RetryPolicy
from worker.queue_worker import MessageBudget, Supervised, hand_back
from worker.stats import EventsStats
from worker.wiring import retry_policy

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
        self.dead_letter_url = dead_letter_url
        self.retry = retry or RetryPolicy()  # RETRY_BACKOFF_*: how long a retried event waits
        self.stats = EventsStats()
        self.concurrency = max(1, concurrency)
        # Messages gathered per batch (receives of 10 back to back while the queue gives full
        # ones): about one per pool thread. More would merge a few more of one email's events
        # into one write, but every message held is one more the queue (and moto's receive,
        # which scans them all per returned message) carries in flight.
        self.batch_size = batch_size or min(100, 10 * -(-self.concurrency // 10))
        # A loop that has not come back from one receive or one batch for this long is hung.
        self.hung_seconds = hung_seconds
        # On a stop, how long the loops may take to finish their batch (Docker allows 10 s).
        self.stop_timeout = stop_timeout
        self._held: dict[str, QueueMessage] = {}  # received, not yet acted on: by receipt
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def run(
        self,
        *,
        stop: threading.Event,
        until_empty: bool = False,
        max_messages: int | None = None,
        wait_time: int = 20,
    ) -> EventsStats:
        """Receive loops (one per 10 handlers, each with a batch in hand while the next is
        received) on watched threads; returns when they drained, stopped, or one failed."""
        budget = MessageBudget(max_messages)
        self.supervisor.start(stop)
        flushed = threading.Event()
        counters = getattr(self.handler, "stats", None)  # a test's handler may have none
        if counters is not None:
            # Counters are written every STATS_FLUSH_SECONDS when events come; this writes what
            # an idle consumer still holds within a second, and the rest when it stops.
            flusher = self.supervisor.watch(
                self._flush_every_second, counters, flushed, name="events-counters", hung_after=60
            )
        if self.concurrency > 1:
            self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="event")
        loops = [
            self.supervisor.watch(
                self._loop,
                stop,
                budget,
                until_empty,
                wait_time,
                name=f"events-loop-{i}",
                hung_after=self.hung_seconds,
            )
            for i in range(max(1, -(-self.concurrency // 10)))
        ]
        try:
            while any(t.is_alive() for t in loops) and not stop.is_set():
                loops[0].join(0.2)
            deadline = time.monotonic() + self.stop_timeout
            while any(t.is_alive() for t in loops) and time.monotonic() < deadline:
                loops[0].join(0.2)
        finally:
            finished = not any(t.is_alive() for t in loops)
            if self.failure or not finished:
                with self._lock:
                    held, self._held = list(self._held.values()), {}
                hand_back(self.queue, held)
            if self._pool is not None:
                self._pool.shutdown(wait=finished, cancel_futures=True)
                self._pool = None
            flushed.set()
            if counters is not None:
                flusher.join(5)
                counters.flush()
            self.supervisor.close()
        return self.stats

    def _flush_every_second(self, counters: Any, flushed: threading.Event) -> None:
        while not flushed.wait(1.0):
            self.supervisor.beat()
            try:  # a failed write keeps its counts (BufferedStats); a bug must not end this
                counters.flush()
            except Exception:
                logger.exception(logfmt("stats.flush_crashed", retry="in a second"))

    def _loop(
        self, stop: threading.Event, budget: MessageBudget, until_empty: bool, wait_time: int
    ) -> None:
        while not stop.is_set():
            self.supervisor.beat()
            batch, stopped = self._gather(stop, budget, wait_time=wait_time)
            if batch:
                self.handle_batch(batch)
            if stopped:
                break
            if not batch and until_empty:
                break

    def _gather(
        self, stop: threading.Event, budget: MessageBudget, *, wait_time: int
    ) -> tuple[list[QueueMessage], bool]:
        """Receives of 10 until ``batch_size`` messages are in hand or a receive comes back short
        (the first long-polls, the others do not wait); True when the loop must end after this
        batch (stopped, or ``max_messages`` reached)."""
        batch: list[QueueMessage] = []
        while len(batch) < self.batch_size:
            wanted = budget.reserve(min(10, self.batch_size - len(batch)))
            if wanted <= 0:
                return batch, True
            try:
                got = self._receive(stop, max_messages=wanted, wait_time=0 if batch else wait_time)
            except EmailOpsError as exc:
                budget.give_back(wanted)
                EventLog(logger).warning("receive.failed", error=exc.describe())
                if batch or stop.wait(min(wait_time, 5) or 1):
                    return batch, stop.is_set()
                continue
            budget.give_back(wanted - len(got or []))
            if got is None:  # stopped during the long poll
                return batch, True
            self.stats.add(received=len(got))
            with self._lock:
                self._held.update((m.receipt_handle, m) for m in got)
            batch += got
            if len(got) < wanted:
                break
        return batch, False

    def _receive(
        self, stop: threading.Event, *, max_messages: int, wait_time: int
    ) -> list[QueueMessage] | None:
        """One receive, long-polled in a helper thread so that a stop does not wait up to
        ``wait_time`` for it (Docker's stop grace period is 10 s; a poll is up to 20). None when
        stopped first: what that poll still brings is handed back (visibility 0)."""
        done, lock = threading.Event(), threading.Lock()
        result: dict[str, Any] = {}

        def poll() -> None:
            try:
                result["batch"] = self.queue.receive(
                    max_messages=max_messages, wait_seconds=wait_time
                )
            except Exception as exc:  # raised again in the loop's thread
                result["error"] = exc
            with lock:  # either the loop takes the batch, or it left and this hands it back
                done.set()
                abandoned = result.get("abandoned", False)
            if abandoned and result.get("batch"):
                with contextlib.suppress(EmailOpsError):  # or it reappears after its timeout
                    self.queue.release(result["batch"])

        threading.Thread(target=poll, name="events-receiver", daemon=True).start()
        while not done.wait(0.2):
            if stop.is_set():
                with lock:
                    if not done.is_set():
                        result["abandoned"] = True
                        return None
        if "error" in result:
            raise result["error"]
        return result["batch"]

    def handle_batch(self, batch: list[QueueMessage]) -> None:
        started = time.perf_counter()
        try:
            # One email's events in one task (one journal write), emails' tasks on the pool.
            outcomes = self.handler.handle_batch(
                [(message.body, message.receive_count) for message in batch],
                run=self._pool.map if self._pool is not None else map,
            )
        except Exception as exc:  # a bug must not take the loop down; SQS will redeliver
            logger.exception(logfmt("batch.crashed", count=len(batch)))
            outcomes = [
                EventOutcome(EventAction.RETRY, reason=f"internal error: {exc!r}") for _ in batch
            ]
        ms = round((time.perf_counter() - started) * 1000, 1)
        done: list[QueueMessage] = []
        for message, outcome in zip(batch, outcomes, strict=True):
            self._log(message, outcome, ms)
            if outcome.action is EventAction.DELETE:
                done.append(message)
                kind = {"applied": "applied", "duplicate": "duplicates"}.get(outcome.result)
                self.stats.add(**{kind or "stored": 1})
            else:
                self._act(message, outcome)
        if done:
            try:
                self.queue.delete_batch(done)
            except EmailOpsError as exc:  # they come back and are found to be duplicates
                EventLog(logger).warning("delete.failed", count=len(done), error=exc.describe())
        with self._lock:
            for message in batch:
                self._held.pop(message.receipt_handle, None)

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

    def _act(self, message: QueueMessage, outcome: EventOutcome) -> None:
        log = EventLog(logger, sqsMessageId=message.message_id)
        try:
            if outcome.action is EventAction.DEAD_LETTER and self.dead_letter_url:
                self.stats.add(dead_lettered=1)
                self.queue.dead_letter(message, self.dead_letter_url, outcome.reason)
                return
            if outcome.action is EventAction.DEAD_LETTER:
                log.error("dead_letter.unavailable", reason="events queue has no RedrivePolicy")
            self.stats.add(retried=1)
            # Each redelivery of an event counts as one attempt: the same back-off as a request.
            self.queue.change_visibility(message, self.retry.delay(message.receive_count))
        except EmailOpsError as exc:  # it simply reappears after the visibility timeout
            log.warning("queue_action.failed", action=outcome.action.value, error=exc.describe())


def build_events_consumer(*, concurrency: int | None = None) -> EventsConsumer:
    """Check settings, read the events queue's DLQ once, and wire the handler."""
    container.current().config.check_events()
    if concurrency is None:
        concurrency = settings.SES_EVENTS_CONCURRENCY
    if concurrency > 1:  # one pooled connection per handler thread and receive loop
        size_connection_pools(concurrency + 8)
        container.reset()
    built = container.current()
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
        allowedTopics=",".join(sorted(verifier.allowed_topics)) or "any",
        concurrency=concurrency,
    )
    return EventsConsumer(
        queue=queue,
        handler=built.delivery_event_handler,
        dead_letter_url=info.dead_letter_url,
        concurrency=concurrency,
        retry=retry_policy(),
    )
