"""What the email consumer does with a record once its outcome is known: delete it (batched),
re-enqueue a fresh copy carrying its RetryState, put it back to wait, or dead-letter it. The email
consumer's disposition policy on the queue worker (``worker.queue_loop.Disposition``): it also
refreshes a record received near maxReceiveCount as it comes, before any worker gets to it.

Back-off and the retry budget are ``emailops.core.retry.RetryPolicy``'s (RETRY_BACKOFF_*,
RETRY_MAX_SECONDS), the same rule the pipeline applies to transient trouble.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from emailops.aws.sqs import OriginalKept, QueueMessage, SqsQueue
from emailops.core.errors import EmailOpsError
from emailops.core.events import EventLog
from emailops.core.pipeline import Action, RecordOutcome
from emailops.core.retry import STATE_ATTRIBUTE, RetryPolicy, RetryState
from emailops.core.state_seal import StateSeal
from worker.inflight import DeleteBatcher
from worker.stats import ConsumerStats, Health

__all__ = ["EmailDisposition", "carried_state"]

logger = logging.getLogger("worker.consumer")

# Marks SENT what a state says SES accepted; returns the state without what is now marked.
SettleAccepted = Callable[..., RetryState]


def carried_state(message: QueueMessage, seal: StateSeal, *, quiet: bool = False) -> RetryState:
    """The carried RetryState; an unreadable one, or one we did not seal for this message (a
    producer's forgery: see core.state_seal), is a fresh state (the journal still guards every
    recipient), never a reason to stall. Logged by the one caller per delivery not ``quiet``."""
    opened = seal.open(message.string_attribute(STATE_ATTRIBUTE), message.body)
    if opened.problem and not quiet:
        EventLog(logger, sqsMessageId=message.message_id).warning(
            "record.state_refused" if opened.refused else "record.state_unreadable",
            reason=opened.problem,
            consequence="processed as a fresh record",
        )
    return opened.state


@dataclass(eq=False, kw_only=True)
class EmailDisposition:
    queue: SqsQueue
    lease_queue: SqsQueue  # short timeouts: visibility changes must not hang a worker
    deletes: DeleteBatcher
    retry: RetryPolicy
    dead_letter_url: str | None
    settle_accepted: SettleAccepted
    stats: ConsumerStats
    health: Health
    clock: Callable[[], float]
    seal: StateSeal  # what this consumer's copies carry is sealed, and opened, with it
    max_receive_count: int | None = None

    def on_received(self, messages: Sequence[QueueMessage]) -> list[QueueMessage]:
        """Near maxReceiveCount: refreshed at once, all together, not when a worker gets to
        them: a consumer killed meanwhile would use up one more receive of each."""
        worn = [m for m in messages if self.worn_out(m)]
        if worn:
            self.refresh(worn)
        return worn

    def worn_out(self, message: QueueMessage) -> bool:
        """SQS dead-letters a record received maxReceiveCount times, with no reason: a record
        that came back that often (crashed consumers, waits) starts again as a fresh copy. Not
        one whose move to the DLQ failed: refreshing that forever would loop; SQS ends it."""
        most = self.max_receive_count
        return (
            bool(most)
            and message.receive_count > 1
            and message.receive_count >= most - 1
            and not carried_state(message, self.seal, quiet=True).dead_letter
        )

    def settle(self, messages: Sequence[QueueMessage], outcomes: Sequence[RecordOutcome]) -> None:
        for message, outcome in zip(messages, outcomes, strict=True):
            self.act(message, outcome)

    def act(self, message: QueueMessage, outcome: RecordOutcome) -> None:
        log = EventLog(logger, sqsMessageId=message.message_id, messageId=outcome.message_id)
        if outcome.action is Action.DELETE:
            self.health.record_done()
            self.deletes.add(message)
        elif outcome.action is Action.RETRY:
            self.stats.add(retried=1)
            delay = self.retry.delay(outcome.state.attempts)
            self.requeue(message, delay, outcome.state, reason=outcome.reason)
        elif outcome.action is Action.WAIT:
            self.stats.add(waiting=1)
            if outcome.fault:
                self.health.fault_seen(outcome.fault, outcome.reason)
            self.set_visibility(message, int(outcome.wait_until - self.clock()) + 1, log)
        elif self.dead_letter_url:
            self.stats.add(dead_lettered=1)
            try:
                self.queue.dead_letter(
                    message,
                    self.dead_letter_url,
                    outcome.reason,
                    carried=self.carried(message, outcome.state),
                )
            except EmailOpsError as exc:
                log.warning("dead_letter.failed", error=exc.describe())
                self._dead_letter_failed(message, outcome)
        else:  # only with --allow-no-dead-letter-queue
            log.error("dead_letter.unavailable", reason=outcome.reason)
            self.set_visibility(message, self.retry.backoff_cap, log)

    def crashed(self, messages: Sequence[QueueMessage]) -> None:
        """A bug outside the pipeline (it returns outcomes, never raises for a record): the
        record looks again after the base back-off."""
        for message in messages:
            log = EventLog(logger, sqsMessageId=message.message_id)
            self.set_visibility(message, self.retry.backoff_base, log)

    def refresh(self, messages: list[QueueMessage]) -> None:
        """Fresh copies, in one call (a per-record fallback if the batch call fails)."""
        # Opened once a message: a refused state is logged once, not again by the fallback.
        states = {m.message_id: carried_state(m, self.seal) for m in messages}
        carried = [(m, self.carried(m, states[m.message_id])) for m in messages]
        try:
            left = set(self.queue.requeue_now(carried))
        except EmailOpsError as exc:
            EventLog(logger).warning(
                "refresh.batch_failed", count=len(messages), error=exc.describe()
            )
            left = {m.message_id for m in messages}
        for message, _ in carried:
            if message.message_id in left:
                state = states[message.message_id]
                self.requeue(message, 0, state, reason="receive count near maxReceiveCount")
            else:
                EventLog(logger, sqsMessageId=message.message_id).info(
                    "record.refreshed", receiveCount=message.receive_count
                )
        self.stats.add(refreshed=len(messages))

    def _dead_letter_failed(self, message: QueueMessage, outcome: RecordOutcome) -> None:
        """Remember the decision on a copy, so the record is not processed (or refreshed) again:
        the next delivery tries the move only, and if that keeps failing, SQS's own redrive
        (maxReceiveCount) ends it."""
        delay = self.retry.backoff_base
        if outcome.state.dead_letter:
            log = EventLog(logger, sqsMessageId=message.message_id)
            self.set_visibility(message, delay, log)
            return
        marked = replace(outcome.state, dead_letter=outcome.reason[:4000] or "dead-lettered")
        self.requeue(message, delay, marked, reason="dead-letter move failed")

    def requeue(self, message: QueueMessage, delay: int, state: RetryState, reason: str) -> None:
        """A fresh copy carrying ``state``. When no copy can carry it, the original stays without
        it: the sends SES accepted are marked in the journal now instead (they must never be sent
        again), and a record too large ever to carry its state is dead-lettered, since its retry
        budget could never advance."""
        log = EventLog(logger, sqsMessageId=message.message_id)
        try:
            self.queue.requeue(message, delay_seconds=delay, carried=self.carried(message, state))
            log.info("record.requeued", seconds=delay, attempts=state.attempts, reason=reason)
            return
        except OriginalKept as exc:  # the copy carries the state; the original waits 12 h
            log.error("requeue.original_kept", error=exc.describe())
            return
        except EmailOpsError as exc:
            error = exc
        state = self.settle_accepted(state, body=message.body, record_id=message.message_id)
        if error.permanent and self.dead_letter_url:
            log.error("requeue.impossible", error=error.describe(), consequence="dead-lettered")
            self.act(
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
            self.set_visibility(message, delay, log)

    def carried(self, message: QueueMessage, state: RetryState) -> dict[str, str]:
        """The attribute a copy of ``message`` carries ``state`` in, sealed for its body."""
        return {STATE_ATTRIBUTE: self.seal.seal(state, message.body)}

    def set_visibility(self, message: QueueMessage, seconds: int, log: EventLog) -> None:
        try:
            self.lease_queue.change_visibility(message, seconds)
        except EmailOpsError as exc:
            # Without the change the record simply reappears after the visibility timeout.
            log.warning("visibility.failed", seconds=seconds, error=exc.describe())
