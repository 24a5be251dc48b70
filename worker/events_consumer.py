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
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from emailops import container
from emailops.aws.clients import size_connection_pools
from emailops.aws.sqs import QueueMessage, SqsQueue
from emailops.core.delivery_handler import DeliveryEventHandler, EventAction, EventOutcome
from emailops.core.errors import EmailOpsError
from emailops.core.events import EventLog, logfmt

__all__ = ["EventsConsumer", "EventsStats", "build_events_consumer"]

logger = logging.getLogger("worker.events_consumer")
RETRY_BASE_SECONDS = 30
RETRY_CAP_SECONDS = 900


@dataclass
class EventsStats:
    received: int = 0
    applied: int = 0
    duplicates: int = 0
    stored: int = 0
    retried: int = 0
    dead_lettered: int = 0


class EventsConsumer:
    def __init__(
        self,
        *,
        queue: SqsQueue,
        handler: DeliveryEventHandler,
        dead_letter_url: str | None,
        concurrency: int = 1,
        batch_size: int | None = None,
    ) -> None:
        self.queue = queue
        self.handler = handler
        self.dead_letter_url = dead_letter_url
        self.stats = EventsStats()
        self.concurrency = max(1, concurrency)
        # Messages gathered per batch (receives of 10 back to back while the queue gives full
        # ones): about one per pool thread. More would merge a few more of one email's events
        # into one write, but every message held is one more the queue (and moto's receive,
        # which scans them all per returned message) carries in flight.
        self.batch_size = batch_size or min(100, 10 * -(-self.concurrency // 10))
        self._lock = threading.Lock()  # stats and the max_messages budget, across loops
        self._pool: ThreadPoolExecutor | None = None

    def run(
        self,
        *,
        stop: threading.Event,
        until_empty: bool = False,
        max_messages: int | None = None,
        wait_time: int = 20,
    ) -> EventsStats:
        counters = getattr(self.handler, "stats", None)  # a test's handler may have none
        if counters is None:
            return self._run(stop, until_empty, max_messages, wait_time)
        # Counters are written every STATS_FLUSH_SECONDS when events come; this writes what an
        # idle consumer still holds within a second, and the rest when it stops.
        flushed = threading.Event()

        def flush_every_second() -> None:
            while not flushed.wait(1.0):
                try:  # a failed write keeps its counts (BufferedStats); a bug must not end this
                    counters.flush()
                except Exception:
                    logger.exception(logfmt("stats.flush_crashed", retry="in a second"))

        flusher = threading.Thread(target=flush_every_second, name="events-counters", daemon=True)
        flusher.start()
        try:
            return self._run(stop, until_empty, max_messages, wait_time)
        finally:
            flushed.set()
            flusher.join(5)
            counters.flush()

    def _run(
        self, stop: threading.Event, until_empty: bool, max_messages: int | None, wait_time: int
    ) -> EventsStats:
        kwargs = {"until_empty": until_empty, "max_messages": max_messages, "wait_time": wait_time}
        if self.concurrency == 1:
            self._loop(stop, **kwargs)
            return self.stats
        # A receive loop per 10 handlers: one batch in hand while the next is being received.
        loops = max(1, -(-self.concurrency // 10))
        with ThreadPoolExecutor(self.concurrency, thread_name_prefix="event") as pool:
            self._pool = pool
            threads = [
                threading.Thread(
                    target=self._loop, args=(stop,), kwargs=kwargs, name=f"events-loop-{i}"
                )
                for i in range(loops)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            self._pool = None
        return self.stats

    def _loop(
        self,
        stop: threading.Event,
        *,
        until_empty: bool,
        max_messages: int | None,
        wait_time: int,
    ) -> None:
        while not stop.is_set():
            batch, stopped = self._gather(stop, max_messages=max_messages, wait_time=wait_time)
            if batch:
                self.handle_batch(batch, counted=True)
            if stopped:
                break
            if not batch and until_empty:
                break

    def _gather(
        self, stop: threading.Event, *, max_messages: int | None, wait_time: int
    ) -> tuple[list[QueueMessage], bool]:
        """Receives of 10 until ``batch_size`` messages are in hand or a receive comes back short
        (the first long-polls, the others do not wait); True when the loop must end after this
        batch (stopped, or ``max_messages`` reached)."""
        batch: list[QueueMessage] = []
        while len(batch) < self.batch_size:
            with self._lock:  # reserve this receive's share of the budget
                left = 10 if max_messages is None else max_messages - self.stats.received
                wanted = min(10, left, self.batch_size - len(batch))
                self.stats.received += max(0, wanted)
            if wanted <= 0:
                return batch, True
            try:
                got = self._receive(stop, max_messages=wanted, wait_time=0 if batch else wait_time)
            except EmailOpsError as exc:
                with self._lock:
                    self.stats.received -= wanted
                EventLog(logger).warning("receive.failed", error=exc.describe())
                if batch or stop.wait(min(wait_time, 5) or 1):
                    return batch, stop.is_set()
                continue
            with self._lock:  # give back the part of the reservation that did not come
                self.stats.received -= wanted - len(got or [])
            if got is None:  # stopped during the long poll
                return batch, True
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

    def handle_batch(self, batch: list[QueueMessage], *, counted: bool = False) -> None:
        if not counted:
            with self._lock:
                self.stats.received += len(batch)
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
                with self._lock:
                    if outcome.result == "applied":
                        self.stats.applied += 1
                    elif outcome.result == "duplicate":
                        self.stats.duplicates += 1
                    else:
                        self.stats.stored += 1
            else:
                self._act(message, outcome)
        if done:
            try:
                self.queue.delete_batch(done)
            except EmailOpsError as exc:  # they come back and are found to be duplicates
                EventLog(logger).warning("delete.failed", count=len(done), error=exc.describe())

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
                with self._lock:
                    self.stats.dead_lettered += 1
                self.queue.dead_letter(message, self.dead_letter_url, outcome.reason)
                return
            if outcome.action is EventAction.DEAD_LETTER:
                log.error("dead_letter.unavailable", reason="events queue has no RedrivePolicy")
            with self._lock:
                self.stats.retried += 1
            delay = min(RETRY_CAP_SECONDS, RETRY_BASE_SECONDS * 2 ** (message.receive_count - 1))
            self.queue.change_visibility(message, delay)
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
    )
