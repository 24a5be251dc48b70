"""What the SES events consumer does with a message once its outcome is known: the events
consumer's disposition policy on the queue worker (``worker.queue_loop.Disposition``).

Applied, duplicate and stored events are deleted, a batch's in one call; transient trouble leaves
the message for redelivery after the RETRY_BACKOFF_* back-off (each redelivery counts as one
attempt, as for a request); a message we cannot trust or read goes to the queue's dead-letter
queue with a ``FailureReason``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from emailops.aws.sqs import QueueMessage, SqsQueue
from emailops.core.delivery_handler import EventAction, EventOutcome
from emailops.core.errors import EmailOpsError
from emailops.core.events import EventLog
from emailops.core.retry import RetryPolicy
from worker.stats import EventsStats, Health

__all__ = ["EventsDisposition"]

logger = logging.getLogger("worker.events_consumer")

_DELETED_AS = {"applied": "applied", "duplicate": "duplicates"}  # any other result: "stored"


@dataclass(eq=False, kw_only=True)
class EventsDisposition:
    queue: SqsQueue
    dead_letter_url: str | None
    retry: RetryPolicy
    stats: EventsStats
    health: Health

    def on_received(self, messages: Sequence[QueueMessage]) -> list[QueueMessage]:
        return []  # every event is handled

    def settle(self, messages: Sequence[QueueMessage], outcomes: Sequence[EventOutcome]) -> None:
        done: list[QueueMessage] = []
        for message, outcome in zip(messages, outcomes, strict=True):
            if outcome.action is EventAction.DELETE:
                done.append(message)
                self.stats.add(**{_DELETED_AS.get(outcome.result, "stored"): 1})
            else:
                self.act(message, outcome)
        if not done:
            return
        self.health.record_done()
        try:
            self.queue.delete_batch(done)
        except EmailOpsError as exc:  # they come back and are found to be duplicates
            EventLog(logger).warning("delete.failed", count=len(done), error=exc.describe())

    def act(self, message: QueueMessage, outcome: EventOutcome) -> None:
        log = EventLog(logger, sqsMessageId=message.message_id)
        try:
            if outcome.action is EventAction.DEAD_LETTER and self.dead_letter_url:
                self.stats.add(dead_lettered=1)
                self.queue.dead_letter(message, self.dead_letter_url, outcome.reason)
                return
            if outcome.action is EventAction.DEAD_LETTER:
                log.error("dead_letter.unavailable", reason="events queue has no RedrivePolicy")
            self.stats.add(retried=1)
            self.back_off(message)
        except EmailOpsError as exc:  # it simply reappears after the visibility timeout
            log.warning("queue_action.failed", action=outcome.action.value, error=exc.describe())

    def crashed(self, messages: Sequence[QueueMessage]) -> None:
        """A bug past the handler (it turns its own crashes into retries): back off each."""
        for message in messages:
            try:
                self.back_off(message)
            except EmailOpsError as exc:
                EventLog(logger, sqsMessageId=message.message_id).warning(
                    "queue_action.failed", action="retry", error=exc.describe()
                )

    def back_off(self, message: QueueMessage) -> None:
        self.queue.change_visibility(message, self.retry.delay(message.receive_count))
