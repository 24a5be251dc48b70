"""The consume loop: receive a batch, run each record through the pipeline, act on the outcome.

Records are isolated from each other: one record's failure, or a bug it triggers, never touches the
others in its batch. Deletes are batched. A stop request lets the current batch finish.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from emailops.aws.sqs import QueueMessage, SqsQueue
from emailops.core.errors import EmailOpsError
from emailops.core.events import EventLog, logfmt
from emailops.core.pipeline import Action, EmailPipeline, RecordOutcome, backoff_seconds

__all__ = ["Consumer", "ConsumerStats"]

logger = logging.getLogger("worker.consumer")


@dataclass
class ConsumerStats:
    received: int = 0
    deleted: int = 0
    retried: int = 0
    waiting: int = 0
    dead_lettered: int = 0


class Consumer:
    def __init__(
        self,
        *,
        queue: SqsQueue,
        pipeline: EmailPipeline,
        dead_letter_url: str | None,
        backoff_base: int,
        backoff_cap: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.queue = queue
        self.pipeline = pipeline
        self.dead_letter_url = dead_letter_url
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.clock = clock
        self.stats = ConsumerStats()

    def run(
        self,
        *,
        stop: threading.Event,
        until_empty: bool = False,
        max_messages: int | None = None,
        wait_time: int = 20,
        batch_size: int = 10,
    ) -> ConsumerStats:
        while not stop.is_set():
            wanted = (
                batch_size
                if max_messages is None
                else min(batch_size, max_messages - self.stats.received)
            )
            if wanted <= 0:
                break
            try:
                batch = self.queue.receive(max_messages=wanted, wait_seconds=wait_time)
            except EmailOpsError as exc:
                EventLog(logger).warning("receive.failed", error=exc.describe())
                stop.wait(min(wait_time, 5) or 1)
                continue
            if not batch:
                if until_empty:
                    break
                continue
            self.handle_batch(batch)
        return self.stats

    def handle_batch(self, batch: list[QueueMessage]) -> None:
        self.stats.received += len(batch)
        to_delete: list[QueueMessage] = []
        for message in batch:
            outcome = self._process(message)
            if outcome.action is Action.DELETE:
                to_delete.append(message)
            else:
                self._act(message, outcome)
        if to_delete:
            try:
                failed = self.queue.delete_batch(to_delete)
            except EmailOpsError as exc:
                # They will reappear after the visibility timeout and be skipped as already SENT.
                EventLog(logger).warning(
                    "delete.failed", count=len(to_delete), error=exc.describe()
                )
                failed = [m.message_id for m in to_delete]
            self.stats.deleted += len(to_delete) - len(failed)

    def _process(self, message: QueueMessage) -> RecordOutcome:
        log = EventLog(logger, sqsMessageId=message.message_id, receiveCount=message.receive_count)
        started = time.perf_counter()
        try:
            outcome = self.pipeline.process(message.body, record_id=message.message_id)
        except Exception as exc:  # a bug must not take the batch down; SQS will redeliver
            logger.exception(logfmt("record.crashed", sqsMessageId=message.message_id))
            outcome = RecordOutcome(
                Action.RETRY, reason=f"internal error: {type(exc).__name__}: {exc}"
            )
        log.log(
            logging.INFO if outcome.action in (Action.DELETE, Action.WAIT) else logging.WARNING,
            "record.done",
            messageId=outcome.message_id or None,
            outcome=outcome.action.value,
            sent=outcome.sent,
            skipped=outcome.skipped,
            reason=outcome.reason or None,
            ms=round((time.perf_counter() - started) * 1000, 1),
        )
        return outcome

    def _act(self, message: QueueMessage, outcome: RecordOutcome) -> None:
        log = EventLog(logger, sqsMessageId=message.message_id)
        try:
            if outcome.action is Action.WAIT:
                self.stats.waiting += 1
                self.queue.change_visibility(message, int(outcome.wait_until - self.clock()) + 1)
            elif outcome.action is Action.DEAD_LETTER and self.dead_letter_url:
                self.stats.dead_lettered += 1
                self.queue.dead_letter(message, self.dead_letter_url, outcome.reason)
            else:
                if outcome.action is Action.DEAD_LETTER:
                    log.error(
                        "dead_letter.unavailable", reason="queue has no RedrivePolicy; leaving it"
                    )
                self.stats.retried += 1
                delay = backoff_seconds(
                    message.receive_count, base=self.backoff_base, cap=self.backoff_cap
                )
                self.queue.change_visibility(message, delay)
                log.info("record.backoff", seconds=delay)
        except EmailOpsError as exc:
            # Without the visibility change the record simply reappears after the timeout.
            log.warning("queue_action.failed", action=outcome.action.value, error=exc.describe())
