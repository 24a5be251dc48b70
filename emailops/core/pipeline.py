"""The whole life of one queue record: parse → compose → per recipient claim → send → mark.

``EmailPipeline.process`` never raises for a record's own trouble; it returns what the queue should do
with the record (delete it, retry it later, wait, or dead-letter it). All state is local to the call
(each recipient returns its own result), so one pipeline serves many threads; recipients of one
record may run in parallel through the injected ``fan_out``.

The steps up to the send live here; the journal marks and the record's decision in
``pipeline_settle``; the vocabulary (``Action``, ``RecordOutcome``, ...) in ``pipeline_model``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from email.utils import formataddr

from emailops.core.compose import Composed, Composer
from emailops.core.contract import EmailRequest, Recipient, parse_request
from emailops.core.dedupe import dedupe_key, reserved_dedupe_id
from emailops.core.erasure import Tombstones
from emailops.core.errors import DailyQuotaExceeded, EmailOpsError, InvalidRequest, SendThrottled
from emailops.core.events import EventLog
from emailops.core.header_text import control_problem
from emailops.core.log_only import LogOnlyReason
from emailops.core.pipeline_model import (
    Action,
    HeldClaim,
    HeldClaims,
    PipelineSettings,
    R,
    RecordOutcome,
    T,
    _error_result,
    _HeldBack,
    _Kind,
    _NotNow,
    _Result,
    sequential,
)
from emailops.core.pipeline_settle import PipelineSettlement
from emailops.core.ports import (
    Claim,
    ClaimState,
    Journal,
    OutgoingEmail,
    ReputationGate,
    Sender,
    SendGuard,
    SendRateLimiter,
    SendSwitch,
    Stats,
    SuppressionList,
)
from emailops.core.preferences import (
    Preference,
    PreferenceStore,
    UnsubscribeLinks,
    may_be_refused,
    unsubscribed_detail,
)
from emailops.core.reputation import GateDecision
from emailops.core.retry import RetryState, backoff_seconds
from emailops.core.send_guard import GuardVerdict, Verdict
from emailops.core.webhooks import NullOutbox, WebhookOutbox, not_delivered_event

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

UNSUBSCRIBE_URL = "unsubscribeUrl"  # the template variable of a recipient's unsubscribe link


@dataclass(eq=False, kw_only=True)
class EmailPipeline(PipelineSettlement):
    composer: Composer
    journal: Journal
    sender: Sender
    settings: PipelineSettings
    suppressions: SuppressionList | None = None
    # Recipient preferences: a categorised, non-critical email to a recipient who unsubscribed
    # from its category is journaled log-only; the consumer's store is a short cache.
    preferences: PreferenceStore | None = None
    # The one-click unsubscribe URL such an email carries (List-Unsubscribe), when there is one.
    unsubscribe_links: UnsubscribeLinks | None = None
    # Erasure's tombstones: an erased recipient is still sent to, its row names it by hash.
    tombstones: Tombstones | None = None
    rate_limiter: SendRateLimiter | None = None
    stats: Stats | None = None
    gate: ReputationGate | None = None
    send_switch: SendSwitch | None = None  # the console's emergency stop
    slow_limiter: SendRateLimiter | None = None  # the reduced rate of normal mail while it acts
    send_guard: SendGuard | None = None  # the rate safeguard and the loop detector
    fan_out: Callable[[Callable[[T], R], Sequence[T]], list[R]] = sequential
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    # Delivery webhooks: told of each fact once its journal write succeeded (see _emit).
    outbox: WebhookOutbox = field(default_factory=NullOutbox)

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
        # unsubscribeUrl is each recipient's own, given when its copy is rendered (_personalised)
        missing = [name for name in composed.missing if name != UNSUBSCRIBE_URL]
        if missing:
            log.info(
                "render.missing_variables",
                template=composed.template_key,
                missing=",".join(missing),
            )

        decision, why = self._gate(composed.mapping.priority, request, log)

        def deliver(recipient: Recipient) -> _Result:
            try:
                journalled = self._journalled(recipient.email)
            except EmailOpsError as exc:  # the tombstone could not be read: retried later
                log.warning("tombstone.unread", error=exc.describe())
                key = dedupe_key(request, recipient.email)
                return _error_result(exc, key, int(self.clock()), self.settings)
            key = dedupe_key(request, journalled)
            if decision is GateDecision.PAUSE and key not in state.accepted:
                # Waits on the queue, unclaimed: never FAILED, no retry budget used.
                wait_until = int(self.clock()) + self.settings.pause_wait_seconds
                return _Result(_Kind.WAIT, key, f"paused: {why}", wait_until=wait_until)
            rlog = log.bind(recipient=journalled, key=key)
            slow = decision is GateDecision.SLOW
            try:
                return self._deliver(
                    request, recipient, key, composed, state, held, rlog, slow, journalled
                )
            finally:
                held.release(key)

        return refused + self.fan_out(deliver, request.recipients)

    def _deliver(
        self,
        request: EmailRequest,
        recipient: Recipient,
        key: str,
        composed: Composed,
        state: RetryState,
        held: HeldClaims,
        log: EventLog,
        slow: bool = False,
        journalled: str = "",
    ) -> _Result:
        """``journalled``: how the journal names the recipient (``_journalled``)."""
        if key in state.accepted:  # an earlier attempt's send went out; only its mark is owed
            return self._mark_accepted(key, state.accepted[key], log, request=request)
        if held.stopping():
            return _Result(_Kind.STOPPED, key, "consumer stopping")
        claim = self._claim(request, journalled or recipient.email, key, composed)
        try:
            control = self._send_control(composed)
            if control is not None:
                written = self.journal.record_logged_only(
                    claim, reason=control[0], detail=control[1]
                )
                log.info("recipient.logged_only", reason=control[0].value, written=written)
                self._emit_not_delivered(key, control[0], written, log)
                return _Result(_Kind.SUPPRESSED, key, control[1])
            if self.suppressions is not None:
                reason = self.suppressions.suppression_reason(recipient.email)
                if reason:
                    written = self.journal.record_suppressed(claim, reason=reason)
                    log.info("recipient.suppressed", reason=reason, written=written)
                    if written:
                        self._count(request, log, suppressed=1)
                    self._emit_not_delivered(key, LogOnlyReason.SUPPRESSED, written, log)
                    return _Result(_Kind.SUPPRESSED, key, reason)
            unsubscribed = self._unsubscribed(journalled or recipient.email, composed)
            if unsubscribed is not None:
                when = datetime.fromtimestamp(unsubscribed.at, UTC).strftime("%Y-%m-%d")
                detail = unsubscribed_detail(unsubscribed, when)
                reason = LogOnlyReason.UNSUBSCRIBED
                written = self.journal.record_logged_only(claim, reason=reason, detail=detail)
                log.info("recipient.logged_only", reason=reason.value, written=written)
                self._emit_not_delivered(key, reason, written, log)
                return _Result(_Kind.SUPPRESSED, key, detail)
            personal, headers = self._personalised(request, recipient, composed, log)
            allowed = None
            if key not in state.released:  # a Support lead's release goes past the guard once
                guarded, allowed = self._guard(request, recipient, key, claim, log)
                if guarded is not None:
                    return guarded
            claimed = self.journal.claim(claim)
        except EmailOpsError as exc:
            log.warning("claim.failed", error=exc.describe())
            return _error_result(exc, key, int(self.clock()), self.settings)
        if claimed.state is not ClaimState.CLAIMED and allowed is not None:
            self.send_guard.refund(allowed, now=self.clock())  # counted, yet not ours to send
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
            provider_id, waited = self._send(
                email,
                log,
                ready=lambda: self._ready_to_send(key, attempt, held, log),
                slow=slow,
                throttled=lambda: self._count(request, log, throttles=1),
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

    def _send(
        self,
        email: OutgoingEmail,
        log: EventLog,
        *,
        ready: Callable[[], None] = lambda: None,
        slow: bool = False,
        throttled: Callable[[], None] = lambda: None,
    ) -> tuple[str, float]:
        """Take the shared rate, send; SES throttling lowers the rate and tries again in place.

        The rate is taken in the sender's ``before_send``: once the request is built and signed,
        so the send reaches SES at its slot give or take the network, not the SDK's CPU time
        under a busy GIL (sends bunching at SES would put more than the rate in a second).
        ``ready`` runs before the slot is taken (a stopping consumer or a lost claim takes no
        slot) and again just before the send (the wait may have left the claim short); it
        raises _NotNow to hold the send.
        ``slow``: first take a slot of the guard's reduced rate (normal mail while it acts)."""
        waited = 0.0

        def depart() -> None:
            nonlocal waited
            try:
                ready()
                if slow and self.slow_limiter is not None:
                    waited += self.slow_limiter.acquire()
                if self.rate_limiter is not None:
                    waited += self.rate_limiter.acquire()
                ready()
            except Exception as exc:
                raise _HeldBack(exc) from exc

        for tries_left in range(self.settings.throttle_retries, -1, -1):
            try:
                return self.sender.send(email, before_send=depart), waited
            except _HeldBack as held:
                raise held.cause from None
            except SendThrottled as exc:
                throttled()
                if self.rate_limiter is not None:
                    self.rate_limiter.on_throttled()
                if not tries_left:
                    raise
                log.info("send.throttled", error=exc.describe())
            except DailyQuotaExceeded:
                if self.rate_limiter is not None:
                    self.rate_limiter.on_daily_quota_exceeded()
                raise
        raise AssertionError("unreachable")  # pragma: no cover

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

    def _send_control(self, composed: Composed) -> tuple[LogOnlyReason, str] | None:
        """The Go service's whole-request send controls: the service's, then the template's."""
        if not self.settings.send_enabled:
            return LogOnlyReason.SERVICE_STOP, "SEND_ENABLED is false"
        if self.send_switch is not None and (why := self.send_switch.stop_reason()):
            return LogOnlyReason.SERVICE_STOP, f"emergency stop: {why}"
        if composed.mapping.send_disabled:
            return LogOnlyReason.TEMPLATE_OFF, f"SendDisabled on {composed.mapping.message_id}"
        return None

    def _unsubscribed(self, address: str, composed: Composed) -> Preference | None:
        """The recipient's preference that holds this email back: unsubscribed from the mapping's
        category (only categorised, non-critical mail may be refused). ``address`` as the journal
        names it: an erased one's kept preferences live under its tombstone's name. A store
        error propagates: the recipient waits and is tried again, never sent unchecked."""
        mapping = composed.mapping
        if self.preferences is None or not may_be_refused(
            category=mapping.category, priority=mapping.priority
        ):
            return None
        found = self.preferences.get(address, mapping.category)
        return found if found is not None and not found.subscribed else None

    def _personalised(
        self, request: EmailRequest, recipient: Recipient, composed: Composed, log: EventLog
    ) -> tuple[Composed, tuple[tuple[str, str], ...]]:
        """The recipient's copy: for mail it may refuse, with its one-click unsubscribe URL in
        the List-Unsubscribe headers (RFC 8058) and in the template's ``unsubscribeUrl``."""
        mapping = composed.mapping
        if self.unsubscribe_links is None or not may_be_refused(
            category=mapping.category, priority=mapping.priority
        ):
            return composed, ()
        url = self.unsubscribe_links.url(
            address=recipient.email,
            category=mapping.category,
            organization=request.organization_id,
        )
        if not url:
            return composed, ()
        if " " in url or control_problem("unsubscribe URL", url):
            log.warning("unsubscribe.bad_url", detail="not one line without spaces: no header")
            return composed, ()
        personal = self.composer.personalise(composed, {**request.context, UNSUBSCRIBE_URL: url})
        return personal, (
            ("List-Unsubscribe", f"<{url}>"),
            ("List-Unsubscribe-Post", "List-Unsubscribe=One-Click"),
        )

    def _guard(
        self, request: EmailRequest, recipient: Recipient, key: str, claim: Claim, log: EventLog
    ) -> tuple[_Result | None, GuardVerdict | None]:
        """The send guard's word, before the claim as in Go: (None, the allowing verdict) to go
        on; a hold waits on the queue, unclaimed (no retry budget used); a log-only copy is
        journaled as Go does."""
        if self.send_guard is None:
            return None, None
        verdict = self.send_guard.check(
            message_id=request.message_id, recipient=recipient.email, key=key, now=self.clock()
        )
        if verdict.verdict is Verdict.HOLD:
            return _Result(_Kind.WAIT, key, verdict.detail, wait_until=verdict.until), None
        if verdict.verdict is Verdict.LOG_ONLY and verdict.reason is not None:
            written = self.journal.record_logged_only(
                claim, reason=verdict.reason, detail=verdict.detail
            )
            log.warning("recipient.logged_only", reason=verdict.reason.value, written=written)
            self._emit_not_delivered(key, verdict.reason, written, log)
            return _Result(_Kind.SUPPRESSED, key, verdict.detail), None
        return None, verdict

    def _emit_not_delivered(
        self, key: str, reason: LogOnlyReason, written: bool, log: EventLog
    ) -> None:
        """email.not_delivered for a row journaled and never sent (log-only or SUPPRESSED), once:
        only when this write recorded it (a redelivery finds the row written and emits nothing)."""
        if written:
            self._emit(not_delivered_event(key, reason=reason.value, at=self.clock()), log)

    # --- reputation ------------------------------------------------------------------------------

    def _gate(
        self, priority: str, request: EmailRequest, log: EventLog
    ) -> tuple[GateDecision, str]:
        if self.gate is None:
            return GateDecision.GO, ""
        try:
            decision, why = self.gate.decide(
                priority=priority, organization=request.organization_id
            )
        except Exception as exc:  # the guard must never stop mail by failing
            log.warning("reputation.gate_failed", error=f"{type(exc).__name__}: {exc}")
            return GateDecision.GO, ""
        if decision is not GateDecision.GO:
            log.info("reputation.held", decision=decision.value, priority=priority, reason=why)
        return decision, why
