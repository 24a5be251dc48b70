"""The whole life of one queue record: parse → compose → per recipient claim → send → mark.

``EmailPipeline.process`` never raises for a record's own trouble; it returns what the queue should do
with the record (delete it, retry it later, wait, or dead-letter it). All state is local to the call
(each recipient returns its own result), so one pipeline serves many threads; recipients of one
record may run in parallel through the injected ``fan_out``.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from email.utils import formataddr
from enum import Enum
from typing import TypeVar

from emailops.core.compose import Composed, Composer
from emailops.core.contract import EmailRequest, Recipient, parse_request
from emailops.core.dedupe import dedupe_key
from emailops.core.errors import (
    ConfigurationFault,
    DailyQuotaExceeded,
    EmailOpsError,
    InvalidRequest,
    SendThrottled,
)
from emailops.core.events import EventLog
from emailops.core.ports import (
    Claim,
    ClaimState,
    Journal,
    OutgoingEmail,
    ReputationGate,
    Sender,
    SendRateLimiter,
    Stats,
    SuppressionList,
)
from emailops.core.reputation import GateDecision, hour_of
from emailops.core.retry import RetryState, backoff_seconds

__all__ = [
    "Action",
    "EmailPipeline",
    "HeldClaims",
    "PipelineSettings",
    "RecordOutcome",
    "backoff_seconds",
]

logger = logging.getLogger("emailops.pipeline")
T = TypeVar("T")
R = TypeVar("R")


class Action(Enum):
    DELETE = "delete"  # every recipient is done: SENT, skipped, suppressed or refused as input
    RETRY = "retry"  # transient trouble: re-enqueue with back-off (uses the retry budget)
    WAIT = "wait"  # a live claim elsewhere, a configuration fault or the daily quota: look later
    DEAD_LETTER = "dead-letter"  # permanent trouble, or the retry budget ran out


@dataclass(frozen=True)
class RecordOutcome:
    action: Action
    reason: str = ""
    message_id: str = ""  # the request's messageId, when the body parsed
    wait_until: int = 0  # for WAIT: epoch seconds when to look again
    sent: int = 0
    skipped: int = 0
    state: RetryState = field(default_factory=RetryState)  # what the next attempt carries
    fault: str = ""  # a configuration fault's fix, for the consumer's health report
    rate_wait: float = 0.0  # seconds spent waiting for the shared send rate


@dataclass(frozen=True)
class PipelineSettings:
    from_address: str
    reply_to: tuple[str, ...] = ()
    lease_seconds: int = 30  # the queue's visibility timeout
    ttl_days: int = 90
    retry_max_seconds: int = 86_400  # transient trouble dead-letters only after this long
    fault_wait_seconds: int = 60  # how soon a record looks again after a configuration fault
    quota_wait_seconds: int = 600  # ... after SES's daily quota was reached
    mark_retry_delays: tuple[float, ...] = (0.2, 0.5, 1.0, 2.0)  # SENT mark retries while held
    throttle_retries: int = 3  # sends retried in place after SES throttling
    # A send starts only on a claim with at least this long left (else it is extended first).
    claim_send_margin_seconds: int = 5
    pause_wait_seconds: int = 60  # how soon a record paused by the reputation guard looks again


@dataclass(frozen=True)
class HeldClaim:
    attempt: int
    until: float  # epoch seconds the claim's lease ends, as far as we know
    lost: bool = False  # the journal said it is no longer ours


class HeldClaims:
    """The claims one record holds right now, so the consumer's lease keeper can extend them, and
    whether the holder is letting go (a stop: no new send may start).

    Plain dict operations on immutable values, which are atomic in CPython: readers take a copy.
    """

    def __init__(self, stopping: Callable[[], bool] = lambda: False) -> None:
        self._claims: dict[str, HeldClaim] = {}
        self.stopping = stopping

    def hold(self, key: str, attempt: int, until: float = 0) -> None:
        self._claims[key] = HeldClaim(attempt, until)

    def extended(self, key: str, attempt: int, until: float) -> None:
        """The journal took ``until`` for this attempt's claim (ignored once released)."""
        held = self._claims.get(key)
        if held is not None and held.attempt == attempt and not held.lost:
            self._claims[key] = HeldClaim(attempt, max(held.until, until))

    def mark_lost(self, key: str, attempt: int) -> None:
        held = self._claims.get(key)
        if held is not None and held.attempt == attempt:
            self._claims[key] = HeldClaim(attempt, held.until, lost=True)

    def get(self, key: str) -> HeldClaim | None:
        return self._claims.get(key)

    def release(self, key: str) -> None:
        self._claims.pop(key, None)

    def snapshot(self) -> dict[str, int]:
        """Key → attempt of every claim still ours."""
        return {k: c.attempt for k, c in self._claims.copy().items() if not c.lost}

    def leases(self) -> dict[str, HeldClaim]:
        return {k: c for k, c in self._claims.copy().items() if not c.lost}


class _Kind(Enum):
    SENT = "sent"
    SKIPPED = "skipped"  # already SENT: a duplicate delivery
    SUPPRESSED = "suppressed"
    REFUSED = "refused"  # bad input for this recipient only: FAILED row, nothing to retry
    ACCEPTED = "accepted"  # SES accepted, the SENT mark is not stored yet
    TRANSIENT = "transient"
    FAULT = "fault"  # a configuration fault: wait for the fix
    QUOTA = "quota"  # the daily quota: wait
    WAIT = "wait"  # another consumer's live claim
    PERMANENT = "permanent"
    STOPPED = "stopped"  # the consumer is stopping: left for the record's next delivery


@dataclass(frozen=True)
class _Result:
    kind: _Kind
    key: str = ""
    detail: str = ""
    wait_until: int = 0
    provider_id: str = ""
    fix: str = ""
    rate_wait: float = 0.0
    counted: bool = False  # our conditional SENT mark made the change: count it once


class _NotNow(Exception):
    """Raised just before a send that must not start (see ``_ready_to_send``)."""

    def __init__(self, result: _Result) -> None:
        super().__init__(result.detail)
        self.result = result


class _HeldBack(Exception):
    """What ``before_send`` raised (a pause, _NotNow): carried out through the sender so it is
    never taken for the send's own failure, then raised again as it was."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _sequential(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    return [fn(item) for item in items]


def _error_result(exc: EmailOpsError, key: str, now: int, settings: PipelineSettings) -> _Result:
    """The one place an exception's kind becomes a recipient's result."""
    if isinstance(exc, ConfigurationFault):
        return _Result(
            _Kind.FAULT,
            key,
            exc.describe(),
            wait_until=now + settings.fault_wait_seconds,
            fix=exc.fix,
        )
    if isinstance(exc, DailyQuotaExceeded):
        return _Result(
            _Kind.QUOTA, key, exc.describe(), wait_until=now + settings.quota_wait_seconds
        )
    return _Result(_Kind.PERMANENT if exc.permanent else _Kind.TRANSIENT, key, exc.describe())


class EmailPipeline:
    def __init__(
        self,
        *,
        composer: Composer,
        journal: Journal,
        sender: Sender,
        settings: PipelineSettings,
        suppressions: SuppressionList | None = None,
        rate_limiter: SendRateLimiter | None = None,
        stats: Stats | None = None,
        gate: ReputationGate | None = None,
        slow_limiter: SendRateLimiter | None = None,
        fan_out: Callable[[Callable[[T], R], Sequence[T]], list[R]] = _sequential,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.composer = composer
        self.journal = journal
        self.sender = sender
        self.settings = settings
        self.suppressions = suppressions
        self.rate_limiter = rate_limiter
        self.stats = stats
        self.gate = gate
        self.slow_limiter = slow_limiter  # the reduced rate of normal mail while the guard acts
        self.fan_out = fan_out
        self.clock = clock
        self.sleep = sleep

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
                _error_result(exc, dedupe_key(request, r.email), now, self.settings)
                for r in request.recipients
            ]
        if composed.missing:
            log.info(
                "render.missing_variables",
                template=composed.template_key,
                missing=",".join(composed.missing),
            )

        decision, why = self._gate(composed.mapping.priority, request, log)

        def deliver(recipient: Recipient) -> _Result:
            key = dedupe_key(request, recipient.email)
            if decision is GateDecision.PAUSE and key not in state.accepted:
                # Waits on the queue, unclaimed: never FAILED, no retry budget used.
                wait_until = int(self.clock()) + self.settings.pause_wait_seconds
                return _Result(_Kind.WAIT, key, f"paused: {why}", wait_until=wait_until)
            rlog = log.bind(recipient=recipient.email, key=key)
            slow = decision is GateDecision.SLOW
            try:
                return self._deliver(request, recipient, key, composed, state, held, rlog, slow)
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
    ) -> _Result:
        if key in state.accepted:  # an earlier attempt's send went out; only its mark is owed
            return self._mark_accepted(key, state.accepted[key], log, request=request)
        if held.stopping():
            return _Result(_Kind.STOPPED, key, "consumer stopping")
        claim = self._claim(request, recipient.email, key, composed)
        try:
            if self.suppressions is not None:
                reason = self.suppressions.suppression_reason(recipient.email)
                if reason:
                    written = self.journal.record_suppressed(claim, reason=reason)
                    log.info("recipient.suppressed", reason=reason, written=written)
                    if written:
                        self._count(request, log, suppressed=1)
                    return _Result(_Kind.SUPPRESSED, key, reason)
            claimed = self.journal.claim(claim)
        except EmailOpsError as exc:
            log.warning("claim.failed", error=exc.describe())
            return _error_result(exc, key, int(self.clock()), self.settings)
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
            subject=composed.subject,
            html=composed.html,
            text=composed.text,
            reply_to=self.settings.reply_to,
            journal_key=key,
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

    def _mark_sent(
        self, key: str, attempt: int, provider_id: str, log: EventLog, *, rate_wait: float
    ) -> _Result:
        """SES accepted: store the mark, retrying while the record is held. If it still fails,
        the key travels with the record as accepted, so no attempt ever sends it again."""
        error = ""
        for delay in (0.0, *self.settings.mark_retry_delays):
            if delay:
                self.sleep(delay)
            try:
                still_ours = self.journal.mark_sent(
                    key, attempt=attempt, provider_id=provider_id, sent_at=int(self.clock())
                )
            except EmailOpsError as exc:
                error = exc.describe()
                log.warning("mark_sent.failed", sesMessageId=provider_id, error=error)
                continue
            if still_ours:
                log.info("recipient.sent", attempt=attempt, sesMessageId=provider_id)
            else:
                self._note_extra_send(key, attempt, provider_id, log)
            return _Result(
                _Kind.SENT, key, provider_id=provider_id, rate_wait=rate_wait, counted=still_ours
            )
        log.error("mark_sent.pending", sesMessageId=provider_id, error=error)
        return _Result(
            _Kind.ACCEPTED, key, f"SENT mark not stored: {error}", provider_id=provider_id
        )

    def _note_extra_send(self, key: str, attempt: int, provider_id: str, log: EventLog) -> None:
        """Our claim ended before the mark (another consumer may have sent too): the row keeps
        its holder's outcome and records this send beside it, so the extra email is visible."""
        noted = True
        try:
            self.journal.note_extra_send(
                key, attempt=attempt, provider_id=provider_id, sent_at=int(self.clock())
            )
        except EmailOpsError as exc:
            noted = False
            log.error("extra_send.not_noted", sesMessageId=provider_id, error=exc.describe())
        log.error(
            "recipient.sent_after_lease_lost",
            attempt=attempt,
            sesMessageId=provider_id,
            noted=noted,
        )

    def settle_accepted(
        self, state: RetryState, log: EventLog, *, body: str | None = None
    ) -> RetryState:
        """Mark SENT now the sends ``state`` says SES accepted, for a record that cannot carry
        its state to the next attempt (its copy could not be sent): the state without those
        now marked. What stays unmarked is logged as ERROR, key by key."""
        if not state.accepted:
            return state
        request = None  # the record's request, to count the sends by (when it parses)
        if body is not None:
            with contextlib.suppress(InvalidRequest):
                request = parse_request(body)
        left = {
            key: provider_id
            for key, provider_id in state.accepted.items()
            if self._mark_accepted(key, provider_id, log.bind(key=key), request=request).kind
            is _Kind.ACCEPTED
        }
        for key, provider_id in left.items():
            log.error("accepted.unmarked", key=key, sesMessageId=provider_id)
        return replace(state, accepted=left)

    def _mark_accepted(
        self, key: str, provider_id: str, log: EventLog, *, request: EmailRequest | None = None
    ) -> _Result:
        """Mark SENT an earlier attempt's send; it counts as sent now, when this write makes the
        row SENT."""
        try:
            marked = self.journal.mark_accepted(
                key, provider_id=provider_id, sent_at=int(self.clock())
            )
        except EmailOpsError as exc:
            log.warning("mark_sent.failed", sesMessageId=provider_id, error=exc.describe())
            return _Result(
                _Kind.ACCEPTED,
                key,
                f"SENT mark not stored: {exc.describe()}",
                provider_id=provider_id,
            )
        log.info("recipient.sent", sesMessageId=provider_id, reason="mark of an earlier send")
        if marked and request is not None:
            self._count(request, log, sent=1)
        return _Result(_Kind.SENT, key, provider_id=provider_id)

    def _decide(
        self,
        request: EmailRequest,
        results: list[_Result],
        state: RetryState,
        started: int,
        log: EventLog,
    ) -> RecordOutcome:
        """Turn recipients' results into one action for the record (see Action)."""
        now = int(self.clock())
        by_kind: dict[_Kind, list[_Result]] = {}
        for result in results:
            by_kind.setdefault(result.kind, []).append(result)
        accepted = {r.key: r.provider_id for r in by_kind.get(_Kind.ACCEPTED, [])}
        common = {
            "message_id": request.message_id,
            "sent": len(by_kind.get(_Kind.SENT, [])),
            "skipped": len(by_kind.get(_Kind.SKIPPED, [])),
            "rate_wait": sum(r.rate_wait for r in results),
        }

        def reasons(*kinds: _Kind) -> str:
            details = (r.detail for k in kinds for r in by_kind.get(k, []) if r.detail)
            return "; ".join(dict.fromkeys(details))

        faults = by_kind.get(_Kind.FAULT, [])
        if faults and not accepted:
            return RecordOutcome(
                Action.WAIT,
                reason=reasons(_Kind.FAULT),
                wait_until=max(r.wait_until for r in faults),
                state=state,
                fault=faults[0].fix or faults[0].detail,
                **common,
            )
        if accepted or _Kind.TRANSIENT in by_kind:
            reason = reasons(_Kind.ACCEPTED, _Kind.TRANSIENT)
            next_state = state.after_failure(
                now=now, started_at=started, error=reason, accepted=accepted
            )
            if next_state.elapsed(now) < self.settings.retry_max_seconds:
                return RecordOutcome(Action.RETRY, reason=reason, state=next_state, **common)
            reason = (
                f"retry budget exhausted: {next_state.attempts} attempts over "
                f"{next_state.elapsed(now)} s (RETRY_MAX_SECONDS="
                f"{self.settings.retry_max_seconds}); last error: {reason}"
            )
            self._record_failures(
                request, reason, log, only={r.key for r in by_kind.get(_Kind.TRANSIENT, [])}
            )
            return RecordOutcome(Action.DEAD_LETTER, reason=reason, state=next_state, **common)
        waits = by_kind.get(_Kind.QUOTA, []) + by_kind.get(_Kind.WAIT, [])
        # A stop leaves recipients not yet sent to the record's next delivery, at once.
        waits += [replace(r, wait_until=now) for r in by_kind.get(_Kind.STOPPED, [])]
        if waits:
            reason = (
                reasons(_Kind.QUOTA, _Kind.STOPPED, _Kind.WAIT) or "claimed by another consumer"
            )
            until = max(r.wait_until for r in waits)
            return RecordOutcome(
                Action.WAIT, reason=reason, wait_until=until, state=state, **common
            )
        if _Kind.PERMANENT in by_kind:
            return RecordOutcome(
                Action.DEAD_LETTER, reason=reasons(_Kind.PERMANENT), state=state, **common
            )
        return RecordOutcome(Action.DELETE, state=state, **common)

    # --- journal helpers -------------------------------------------------------------------------

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
            template_version=composed.template_version if composed else "",
            producer=request.namespace,
        )

    def _release(self, key: str, attempt: int, log: EventLog) -> None:
        try:
            self.journal.release_claim(key, attempt=attempt)
        except EmailOpsError as exc:  # the lease ends by itself
            log.warning("release_claim.failed", error=exc.describe())

    def _mark_failed(self, key: str, attempt: int, exc: EmailOpsError, log: EventLog) -> bool:
        """Whether the FAILED mark was stored (the change is ours to count)."""
        try:
            if self.journal.mark_failed(
                key,
                attempt=attempt,
                error=exc.describe(),
                kind=type(exc).__name__,
                permanent=exc.permanent,
            ):
                return True
            log.warning("mark_failed.lease_lost", attempt=attempt)
        except EmailOpsError as exc:
            log.error("mark_failed.failed", error=exc.describe())
        return False

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

    def _count(self, request: EmailRequest, log: EventLog, **counts: int) -> None:
        """Add to the reputation counters; a failure costs a count, never a send or a retry."""
        if self.stats is None:
            return
        try:
            self.stats.add(
                message_id=request.message_id,
                organization=request.organization_id,
                hour=hour_of(self.clock()),
                counts=counts,
            )
        except Exception as exc:
            log.warning("stats.not_counted", counts=counts, error=f"{type(exc).__name__}: {exc}")

    def _refuse(self, request: EmailRequest, address: str, reason: str, log: EventLog) -> _Result:
        """One recipient's bad input: a FAILED row for it; the others are still sent."""
        key = dedupe_key(request, address)
        refusal = InvalidRequest("parse request", key=address, reason=reason)
        if self._record_failures(request, reason, log, addresses=[address], failure=refusal):
            # No FAILED row yet: deleting the record now would leave no trace of this recipient.
            return _Result(_Kind.TRANSIENT, key, f"{reason} (its FAILED row is not stored yet)")
        return _Result(_Kind.REFUSED, key, reason)

    def _record_failures(
        self,
        request: EmailRequest,
        error: str,
        log: EventLog,
        *,
        only: set[str] | None = None,
        addresses: Iterable[str] | None = None,
        failure: EmailOpsError | None = None,
    ) -> set[str]:
        """A request (or recipient) that can never be sent still leaves a FAILED row. Returns
        the keys whose row could not be written."""
        unwritten: set[str] = set()
        if addresses is None:
            addresses = [r.email for r in request.recipients]
            addresses += [r.address for r in request.rejected]
        for address in addresses:
            key = dedupe_key(request, address)
            if only is not None and key not in only:
                continue
            rlog = log.bind(recipient=address, key=key)
            try:
                written = self.journal.record_failure(
                    self._claim(request, address, key, None),
                    error=error,
                    # No exception: a refused recipient (permanent) or a spent retry budget.
                    kind=type(failure).__name__ if failure else "",
                    permanent=failure.permanent if failure else None,
                )
            except EmailOpsError as exc:
                rlog.error("record_failure.failed", error=exc.describe())
                unwritten.add(key)
                continue
            if written:
                self._count(request, rlog, failed=1)
            rlog.info(
                "recipient.failed" if written else "recipient.failure_not_recorded",
                error=error,
                reason=None if written else "row is SENT or claimed",
            )
        return unwritten
