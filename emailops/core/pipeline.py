"""The whole life of one queue record: parse → compose → per recipient claim → send → mark.

``EmailPipeline.process`` never raises for a record's own trouble; it returns what the queue should do
with the record (delete it, retry it later, wait for another consumer's lease, or dead-letter it).
All state is local to the call, so one pipeline serves many threads.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from email.utils import formataddr
from enum import Enum

from emailops.core.compose import Composed, Composer
from emailops.core.contract import EmailRequest, Recipient, parse_request
from emailops.core.dedupe import dedupe_key
from emailops.core.errors import EmailOpsError, InvalidRequest
from emailops.core.events import EventLog
from emailops.core.ports import Claim, ClaimState, Journal, OutgoingEmail, Sender

__all__ = ["Action", "EmailPipeline", "PipelineSettings", "RecordOutcome", "backoff_seconds"]

logger = logging.getLogger("emailops.pipeline")


class Action(Enum):
    DELETE = "delete"  # every recipient is SENT (now or before)
    RETRY = "retry"  # a transient failure: back off and let SQS redeliver
    WAIT = "wait"  # another consumer holds a live claim: look again when it ends
    DEAD_LETTER = "dead-letter"  # a permanent failure: retrying cannot help


@dataclass(frozen=True)
class RecordOutcome:
    action: Action
    reason: str = ""
    message_id: str = ""  # the request's messageId, when the body parsed
    wait_until: int = 0  # for WAIT: epoch seconds when the blocking lease ends
    sent: int = 0
    skipped: int = 0


@dataclass(frozen=True)
class PipelineSettings:
    from_address: str
    reply_to: tuple[str, ...] = ()
    lease_seconds: int = 30  # the queue's visibility timeout
    ttl_days: int = 90


def backoff_seconds(
    receive_count: int,
    *,
    base: int,
    cap: int,
    rng: Callable[[float, float], float] = random.uniform,
) -> int:
    """Exponential back-off with jitter: between half and all of min(cap, base * 2**(n-1))."""
    ceiling = min(cap, base * 2 ** max(0, receive_count - 1))
    return max(1, int(rng(ceiling / 2, ceiling)))


@dataclass
class _Tally:
    sent: int = 0
    skipped: int = 0
    wait_until: int = 0
    transient: list[str] = field(default_factory=list)
    permanent: list[str] = field(default_factory=list)

    def outcome(self) -> RecordOutcome:
        counts = {"sent": self.sent, "skipped": self.skipped}
        if self.transient:
            return RecordOutcome(Action.RETRY, reason="; ".join(self.transient), **counts)
        if self.wait_until:
            return RecordOutcome(
                Action.WAIT,
                reason="claimed by another consumer",
                wait_until=self.wait_until,
                **counts,
            )
        if self.permanent:
            return RecordOutcome(Action.DEAD_LETTER, reason="; ".join(self.permanent), **counts)
        return RecordOutcome(Action.DELETE, **counts)


class EmailPipeline:
    def __init__(
        self,
        *,
        composer: Composer,
        journal: Journal,
        sender: Sender,
        settings: PipelineSettings,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.composer = composer
        self.journal = journal
        self.sender = sender
        self.settings = settings
        self.clock = clock

    def process(self, body: str, *, record_id: str = "") -> RecordOutcome:
        log = EventLog(logger, sqsMessageId=record_id or None)
        try:
            request = parse_request(body)
        except InvalidRequest as exc:
            log.warning("request.invalid", error=exc.describe())
            if exc.request is not None:
                self._record_failures(exc.request, exc.describe(), log.bind(messageId=exc.key))
            return RecordOutcome(
                Action.DEAD_LETTER, reason=exc.describe(), message_id=exc.key or ""
            )
        outcome = self._process_request(request, log.bind(messageId=request.message_id))
        return replace(outcome, message_id=request.message_id)

    def _process_request(self, request: EmailRequest, log: EventLog) -> RecordOutcome:
        try:
            composed = self.composer.compose(
                request.message_id, request.context, request.organization_id
            )
        except EmailOpsError as exc:
            log.log(
                logging.WARNING if exc.permanent else logging.INFO,
                "compose.failed",
                error=exc.describe(),
                permanent=exc.permanent,
            )
            if not exc.permanent:
                return RecordOutcome(Action.RETRY, reason=exc.describe())
            self._record_failures(request, exc.describe(), log)
            return RecordOutcome(Action.DEAD_LETTER, reason=exc.describe())
        if composed.missing:
            log.info(
                "render.missing_variables",
                template=composed.template_key,
                missing=",".join(composed.missing),
            )

        tally = _Tally()
        for recipient in request.recipients:
            key = dedupe_key(request, recipient.email)
            self._deliver(
                request,
                recipient,
                key,
                composed,
                tally,
                log.bind(recipient=recipient.email, key=key),
            )
        return tally.outcome()

    def _claim(
        self, request: EmailRequest, email: str, key: str, composed: Composed | None
    ) -> Claim:
        return Claim(
            key=key,
            message_id=request.message_id,
            recipient=email,
            context=request.context,
            now=int(self.clock()),
            lease_seconds=self.settings.lease_seconds,
            ttl_seconds=self.settings.ttl_days * 86400,
            subject=composed.subject if composed else "",
            template_key=composed.template_key if composed else "",
        )

    def _deliver(
        self,
        request: EmailRequest,
        recipient: Recipient,
        key: str,
        composed: Composed,
        tally: _Tally,
        log: EventLog,
    ) -> None:
        try:
            claimed = self.journal.claim(self._claim(request, recipient.email, key, composed))
        except EmailOpsError as exc:
            log.warning("claim.failed", error=exc.describe())
            (tally.permanent if exc.permanent else tally.transient).append(exc.describe())
            return
        if claimed.state is ClaimState.ALREADY_SENT:
            log.info("recipient.skipped", reason="already SENT (duplicate delivery)")
            tally.skipped += 1
            return
        if claimed.state is ClaimState.IN_PROGRESS:
            log.info("recipient.in_progress", leaseEndsAt=claimed.lease_ends_at)
            tally.wait_until = max(tally.wait_until, claimed.lease_ends_at)
            return

        attempt = claimed.attempt
        email = OutgoingEmail(
            from_address=self.settings.from_address,
            to=formataddr((recipient.name, recipient.email), charset="utf-8"),
            subject=composed.subject,
            html=composed.html,
            text=composed.text,
            reply_to=self.settings.reply_to,
        )
        try:
            provider_id = self.sender.send(email)
        except EmailOpsError as exc:
            log.warning(
                "send.failed", attempt=attempt, error=exc.describe(), permanent=exc.permanent
            )
            (tally.permanent if exc.permanent else tally.transient).append(exc.describe())
            self._mark_failed(key, attempt, exc.describe(), log)
            return

        tally.sent += 1
        try:
            still_ours = self.journal.mark_sent(
                key, attempt=attempt, provider_id=provider_id, sent_at=int(self.clock())
            )
        except EmailOpsError as exc:
            # The email is out; retrying the record would send it again. Count it as sent and
            # leave the row QUEUED (its lease will show it as stuck) rather than risk a duplicate.
            log.error("mark_sent.failed", sesMessageId=provider_id, error=exc.describe())
            return
        if still_ours:
            log.info("recipient.sent", attempt=attempt, sesMessageId=provider_id)
        else:
            log.warning(
                "recipient.sent_after_lease_lost", attempt=attempt, sesMessageId=provider_id
            )

    def _mark_failed(self, key: str, attempt: int, error: str, log: EventLog) -> None:
        try:
            if not self.journal.mark_failed(key, attempt=attempt, error=error):
                log.warning("mark_failed.lease_lost", attempt=attempt)
        except EmailOpsError as exc:
            log.error("mark_failed.failed", error=exc.describe())

    def _record_failures(self, request: EmailRequest, error: str, log: EventLog) -> None:
        """A request that can never be sent still leaves a FAILED row for each recipient."""
        for recipient in request.recipients:
            key = dedupe_key(request, recipient.email)
            rlog = log.bind(recipient=recipient.email, key=key)
            try:
                written = self.journal.record_failure(
                    self._claim(request, recipient.email, key, None), error=error
                )
            except EmailOpsError as exc:
                rlog.error("record_failure.failed", error=exc.describe())
                continue
            rlog.info(
                "recipient.failed" if written else "recipient.failure_not_recorded",
                error=error,
                reason=None if written else "row is SENT or claimed",
            )
