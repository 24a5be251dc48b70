"""The whole life of one queue record: parse → render → per recipient claim → policies → send → mark.

``EmailPipeline.process`` never raises for a record's own trouble; it returns what the queue should do
with the record (delete it, retry it later, wait, or dead-letter it). All state is local to the call
(each recipient returns its own result), so one pipeline serves many threads; recipients of one
record may run in parallel through the injected ``fan_out``.

The sequence is fixed; what may hold a recipient back is the ordered list of send policies
(emailops.core.send_policy) that ``emailops.pipeline_build`` composes: a control that is off is
not in it. The steps up to the send live here; the journal marks and the record's decision in
``pipeline_settle``; the vocabulary (``Action``, ``RecordOutcome``, ...) in ``pipeline_model``.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from email.utils import formataddr
from typing import TypeVar

from emailops.core.compose import Composed, Composer
from emailops.core.contract import EmailRequest, Recipient, parse_request
from emailops.core.dedupe import dedupe_key, reserved_dedupe_id
from emailops.core.erasure import Tombstones
from emailops.core.errors import EmailOpsError, InvalidRequest
from emailops.core.events import EventLog
from emailops.core.paced_send import send_paced
from emailops.core.personal_copy import (
    UNSUBSCRIBE_URL,
    Headers,
    NoUnsubscribeLinks,
    personalised,
)
from emailops.core.pipeline_model import (
    Action,
    HeldClaim,
    HeldClaims,
    NoStats,
    NoTombstones,
    PipelineSettings,
    R,
    RecordOutcome,
    T,
    Unpaced,
    _error_result,
    _Kind,
    _NotNow,
    _Result,
    sequential,
)
from emailops.core.pipeline_settle import PipelineSettlement
from emailops.core.ports import ClaimState, Journal, OutgoingEmail, Sender, SendRateLimiter, Stats
from emailops.core.preferences import UnsubscribeLinks
from emailops.core.retry import RetryState, backoff_seconds
from emailops.core.send_policy import (
    Alongside,
    Ask,
    Kind,
    SendPolicy,
    Staged,
    Verdict,
    ask_each,
    both_verdicts,
    in_turn,
)
from emailops.core.webhooks import NullOutbox, WebhookOutbox

__all__ = [
    "Action",
    "EmailPipeline",
    "HeldClaim",
    "HeldClaims",
    "PipelineSettings",
    "RecordOutcome",
    "backoff_seconds",
]

logger = logging.getLogger("emailops.pipeline")

Personal = tuple[Composed, Headers]  # the recipient's copy and its extra headers
V = TypeVar("V")


def _caught(fn: Callable[[], V]) -> Callable[[], tuple[V, EmailOpsError | None]]:
    """``fn`` whose EmailOpsError is returned beside its (absent) answer, not raised: the other
    walk's count can then be given back before the error goes on."""

    def run() -> tuple[V, EmailOpsError | None]:
        try:
            return fn(), None
        except EmailOpsError as exc:
            return None, exc  # type: ignore[return-value]

    return run


@dataclass(eq=False, kw_only=True)
class EmailPipeline(PipelineSettlement):
    composer: Composer
    journal: Journal
    sender: Sender
    settings: PipelineSettings
    # What may hold a recipient back, in the order asked (emailops.pipeline_build.send_policies).
    policies: Sequence[SendPolicy]
    # Erasure's tombstones: an erased recipient is still sent to, its row names it by hash.
    tombstones: Tombstones = field(default_factory=NoTombstones)
    # The one-click unsubscribe URL mail its preferences may refuse carries (List-Unsubscribe).
    unsubscribe_links: UnsubscribeLinks = field(default_factory=NoUnsubscribeLinks)
    rate_limiter: SendRateLimiter = field(default_factory=Unpaced)  # the shared SES send rate
    stats: Stats = field(default_factory=NoStats)  # the reputation counters
    fan_out: Callable[[Callable[[T], R], Sequence[T]], list[R]] = sequential
    # Two independent walks of one recipient side by side (its policies' stages), or in turn.
    alongside: Alongside = in_turn
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    # Delivery webhooks: told of each fact once its journal write succeeded (see _emit).
    outbox: WebhookOutbox = field(default_factory=NullOutbox)
    _staged: Staged = field(init=False, repr=False, default=Staged())  # policies by stage

    def process(
        self,
        body: str,
        *,
        record_id: str = "",
        state: RetryState | None = None,
        held: HeldClaims | None = None,
        namespace: str = "",
    ) -> RecordOutcome:
        """``namespace``: the producer's own key space and row owner (the API's token); the
        queue path leaves it empty, so its keys and rows stay the Go consumer's."""
        state = state or RetryState()
        log = EventLog(logger, sqsMessageId=record_id or None)
        started = int(self.clock())
        try:
            request = replace(parse_request(body), namespace=namespace)
        except InvalidRequest as exc:
            log.warning("request.invalid", error=exc.describe())
            if exc.request is not None:
                failed = replace(exc.request, namespace=namespace)
                self._record_failures(
                    failed, exc.describe(), log.bind(messageId=exc.key), failure=exc
                )
            return RecordOutcome(
                Action.DEAD_LETTER, reason=exc.describe(), message_id=exc.key or "", state=state
            )
        log = log.bind(messageId=request.message_id)
        if (reserved := reserved_dedupe_id(request)) is not None:
            # Refused before any claim, and with no row: its keys are another producer's.
            refused = InvalidRequest(
                "parse request", key=request.message_id, reason=reserved, field="dedupeId"
            )
            log.warning("request.invalid", error=refused.describe())
            return RecordOutcome(
                Action.DEAD_LETTER,
                reason=refused.describe(),
                message_id=request.message_id,
                state=state,
            )
        for warning in request.warnings:
            log.warning("request.warning", warning=warning)
        results = self._run(request, state, held or HeldClaims(), log)
        return self._decide(request, results, state, started, log)

    # --- the steps -----------------------------------------------------------------------------

    def _run(
        self, request: EmailRequest, state: RetryState, held: HeldClaims, log: EventLog
    ) -> list[_Result]:
        refused = [
            self._refuse(request, rejected.address, rejected.reason, log)
            for rejected in request.rejected
        ]
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
            if exc.permanent:
                addresses = [r.email for r in request.recipients]
                self._record_failures(
                    request, exc.describe(), log, addresses=addresses, failure=exc
                )
            now = int(self.clock())
            return refused + [
                _error_result(exc, dedupe_key(request, r.email), now, self.settings)  # retried
                for r in request.recipients
            ]
        # unsubscribeUrl is each recipient's own, given when its copy is made (personalised)
        missing = [name for name in composed.missing if name != UNSUBSCRIBE_URL]
        if missing:
            log.info(
                "render.missing_variables",
                template=composed.template_key,
                missing=",".join(missing),
            )
        if self._staged.policies is not self.policies:  # split once, again if replaced
            self._staged = Staged.of(self.policies)
        staged = self._staged
        # The record stage's answer holds for each recipient (a pause: all wait, unclaimed).
        record = ask_each(staged.record, Ask(request, composed, log, self.clock))

        def deliver(recipient: Recipient) -> _Result:
            try:
                journalled = self._journalled(recipient.email)
            except EmailOpsError as exc:  # the tombstone could not be read: retried later
                log.warning("tombstone.unread", error=exc.describe())
                key = dedupe_key(request, recipient.email)
                return _error_result(exc, key, int(self.clock()), self.settings)
            key = dedupe_key(request, journalled)
            if record.kind is Kind.HOLD and key not in state.accepted:
                # Waits on the queue, unclaimed: never FAILED, no retry budget used.
                return _Result(_Kind.WAIT, key, record.detail, wait_until=record.until)
            rlog = log.bind(recipient=journalled, key=key)
            ask = Ask(request, composed, rlog, self.clock, recipient, journalled, key, state)
            try:
                return self._deliver(ask, held, record, staged)
            finally:
                held.release(key)

        return refused + self.fan_out(deliver, request.recipients)

    def _deliver(self, ask: Ask, held: HeldClaims, record: Verdict, staged: Staged) -> _Result:
        """``ask.name``: how the journal names the recipient (``_journalled``); ``record``: the
        record stage's answer."""
        request, recipient, key, log = ask.request, ask.recipient, ask.key, ask.log
        if key in ask.state.accepted:  # an earlier attempt's send went out; only its mark is owed
            return self._mark_accepted(key, ask.state.accepted[key], log, request=request)
        if held.stopping():
            return _Result(_Kind.STOPPED, key, "consumer stopping")
        claim = self._claim(request, ask.name, key, ask.composed)
        try:
            verdict, (personal, headers) = self._ask(ask, record, staged)
            if verdict.kind is not Kind.SEND:
                return self._not_sent(verdict, claim, request, log)
            claimed = self.journal.claim(claim)
        except EmailOpsError as exc:
            log.warning("claim.failed", error=exc.describe())
            return _error_result(exc, key, int(self.clock()), self.settings)
        if claimed.state is not ClaimState.CLAIMED:
            verdict.undo()  # counted, yet not ours to send
        if claimed.state is ClaimState.ALREADY_SENT:
            log.info("recipient.skipped", reason="already SENT or SUPPRESSED (duplicate delivery)")
            return _Result(_Kind.SKIPPED, key)
        if claimed.state is ClaimState.IN_PROGRESS:
            log.info("recipient.in_progress", leaseEndsAt=claimed.lease_ends_at)
            return _Result(_Kind.WAIT, key, wait_until=claimed.lease_ends_at)

        attempt = claimed.attempt
        held.hold(key, attempt, claim.lease_ends_at)
        email = OutgoingEmail(
            from_address=self.settings.from_address,
            to=formataddr((recipient.name, recipient.email), charset="utf-8"),
            subject=personal.subject,
            html=personal.html,
            text=personal.text,
            reply_to=self.settings.reply_to,
            journal_key=key,
            headers=headers,
        )
        waited = 0.0
        try:
            provider_id, waited = send_paced(
                self.sender,
                email,
                log,
                rate=(*verdict.pace, self.rate_limiter),
                ready=lambda: self._ready_to_send(key, attempt, held, log),
                throttled=lambda: self._count(request, log, throttles=1),
                throttle_retries=self.settings.throttle_retries,
            )
        except _NotNow as stop:
            return stop.result
        except EmailOpsError as exc:
            result = _error_result(exc, key, int(self.clock()), self.settings)
            log.warning("send.failed", attempt=attempt, error=exc.describe(), outcome=result.kind)
            if result.kind in (_Kind.FAULT, _Kind.QUOTA):
                self._release(key, attempt, log)  # not the email's fault: never FAILED
            elif self._mark_failed(key, attempt, exc, log):
                self._count(request, log, failed=1)
            return result
        result = self._mark_sent(key, attempt, provider_id, log, rate_wait=waited)
        if result.counted:
            self._count(request, log, sent=1, rate_waits=1 if waited > 0 else 0)
        return result

    def _ask(self, ask: Ask, record: Verdict, staged: Staged) -> tuple[Verdict, Personal]:
        """The recipient stage, then, its copy made, the admission stage (last before the claim
        as in Go: an admission counts the send it allows). The two are independent questions,
        so with both to ask they are asked side by side (``alongside``: the consumer's pool),
        and the answer is the walk's: the recipient stage's refusal first, then the admission's;
        an admission's count is given back (``undo``) when the recipient stage refused."""
        copy = functools.partial(
            personalised,
            self.composer,
            self.unsubscribe_links,
            ask.request,
            ask.recipient,
            ask.composed,
            ask.log,
        )
        if record.kind is not Kind.SEND or not (staged.recipient and staged.admission):
            verdict = ask_each(staged.recipient, ask, record)
            if verdict.kind is not Kind.SEND:
                return verdict, (ask.composed, ())
            personal = copy()
            return ask_each(staged.admission, ask, verdict), personal

        def admit() -> tuple[Verdict, Personal]:
            personal = copy()
            return ask_each(staged.admission, ask), personal

        (first, failed), (then, then_failed) = self.alongside(
            _caught(lambda: ask_each(staged.recipient, ask, record)), _caught(admit)
        )
        if failed is not None or first.kind is not Kind.SEND:
            if then_failed is None and then[0].kind is Kind.SEND:
                then[0].undo()
            if failed is not None:
                raise failed
            return first, (ask.composed, ())
        if then_failed is not None:
            first.undo()
            raise then_failed
        verdict, personal = then
        if verdict.kind is not Kind.SEND:
            first.undo()  # as the walk does: a refusal gives back what the SENDs before it took
            return verdict, personal
        return both_verdicts(first, verdict), personal

    def _ready_to_send(self, key: str, attempt: int, held: HeldClaims, log: EventLog) -> None:
        """Never send on a claim that may have lapsed: waits (the rate, throttling) and a keeper
        that could not extend can leave too little of it. Extend it now, or let go and wait."""
        now = self.clock()
        if held.stopping():
            self._release(key, attempt, log)
            raise _NotNow(_Result(_Kind.STOPPED, key, "consumer stopping"))
        claim = held.get(key)
        if claim is not None and not claim.lost:
            if claim.until - now >= self.settings.claim_send_margin_seconds:
                return
            until = int(now) + self.settings.lease_seconds
            try:
                ours = self.journal.extend_claim(key, attempt=attempt, until=until)
            except EmailOpsError as exc:
                log.warning("send.claim_not_extended", attempt=attempt, error=exc.describe())
                self._release(key, attempt, log)
                raise _NotNow(
                    _Result(
                        _Kind.WAIT,
                        key,
                        f"claim could not be extended before the send: {exc.describe()}",
                        wait_until=int(max(now, claim.until)) + 1,
                    )
                ) from exc
            if ours:
                held.extended(key, attempt, until)
                return
            held.mark_lost(key, attempt)
        log.warning("send.claim_lost", attempt=attempt, reason="not sent: the claim is not ours")
        raise _NotNow(_Result(_Kind.WAIT, key, "claim lost before the send", int(now) + 1))
