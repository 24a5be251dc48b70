"""The pipeline's journal writes and its settlement: marks (SENT, FAILED, accepted sends),
FAILED rows for what can never be sent, the reputation counters, and the one decision that turns
a record's recipient results into a ``RecordOutcome``.

A mixin of ``EmailPipeline`` (see emailops/core/pipeline.py), which holds the collaborators
(``journal``, ``stats``, ``tombstones``, ``outbox``, ``settings``, ``clock``, ``sleep``) these
steps use. A policy's refusal is journaled here too (``_not_sent``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from dataclasses import replace

from emailops.core.compose import Composed
from emailops.core.contract import EmailRequest, parse_request
from emailops.core.dedupe import dedupe_key
from emailops.core.erasure import ERASED_PREFIX
from emailops.core.errors import EmailOpsError, InvalidRequest
from emailops.core.events import EventLog
from emailops.core.log_only import LogOnlyReason
from emailops.core.pipeline_model import Action, RecordOutcome, _Kind, _Result
from emailops.core.ports import Claim
from emailops.core.reputation import hour_of
from emailops.core.retry import RetryPolicy, RetryState
from emailops.core.send_policy import HoldsCounts, Kind, Verdict
from emailops.core.webhooks import WebhookEvent, failed_event, not_delivered_event, sent_event

__all__ = ["PipelineSettlement"]

logger = logging.getLogger("emailops.pipeline")


class PipelineSettlement:
    def _mark_sent(
        self, key: str, attempt: int, provider_id: str, log: EventLog, *, rate_wait: float
    ) -> _Result:
        """SES accepted: store the mark, retrying while the record is held. If it still fails,
        the key travels with the record as accepted, so no attempt ever sends it again."""
        error = ""
        for delay in (0.0, *self.settings.mark_retry_delays):
            if delay:
                self.sleep(delay)
            sent = sent_event(key, ses_message_id=provider_id, sent_at=self.clock())
            try:
                still_ours = self.journal.mark_sent(
                    key,
                    attempt=attempt,
                    provider_id=provider_id,
                    sent_at=int(self.clock()),
                    events=(sent,),
                )
            except EmailOpsError as exc:
                error = exc.describe()
                log.warning("mark_sent.failed", sesMessageId=provider_id, error=error)
                continue
            if still_ours:
                log.info("recipient.sent", attempt=attempt, sesMessageId=provider_id)
                self._emit(sent, log)
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

    def settle_accepted_sends(
        self, state: RetryState, *, body: str | None = None, record_id: str = ""
    ) -> RetryState:
        """Mark SENT now the sends ``state`` says SES accepted, for a record that cannot carry
        its state to the next attempt (its copy could not be sent): the state without those
        now marked. What stays unmarked is logged as ERROR, key by key."""
        if not state.accepted:
            return state
        log = EventLog(logger, sqsMessageId=record_id or None)
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

    def flush_counters(self, *, stopping: bool = False) -> None:
        """Write the reputation counts still buffered (a consumer calls this every second), and
        give back the rate sends a policy reserved and left unspent in ended windows (all of
        them when ``stopping``: another consumer may spend them)."""
        self.stats.flush()
        for policy in self.policies:
            if isinstance(policy, HoldsCounts):
                policy.settle(self.clock(), everything=stopping)

    def _mark_accepted(
        self, key: str, provider_id: str, log: EventLog, *, request: EmailRequest | None = None
    ) -> _Result:
        """Mark SENT an earlier attempt's send; it counts as sent now, when this write makes the
        row SENT."""
        sent = sent_event(key, ses_message_id=provider_id, sent_at=self.clock())
        try:
            marked = self.journal.mark_accepted(
                key, provider_id=provider_id, sent_at=int(self.clock()), events=(sent,)
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
        if marked:
            self._emit(sent, log)
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
            budget = RetryPolicy(max_seconds=self.settings.retry_max_seconds)
            if not budget.exhausted(next_state, now):
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

    def _journalled(self, address: str) -> str:
        """How the journal names ``address``: as it is, or, once it was erased (a tombstone),
        by its keyed hash (``erased:…``), so the row records the send and nothing personal.
        Raises EmailOpsError when the tombstone cannot be read."""
        if self.tombstones.erased_at(address) is None:
            return address
        return self.tombstones.name(address)

    def _claim(
        self, request: EmailRequest, email: str, key: str, composed: Composed | None
    ) -> Claim:
        """``email`` as ``_journalled`` named it: an erased one's row keeps no context or subject
        (both may name the person)."""
        erased = email.startswith(ERASED_PREFIX)
        return Claim(
            key=key,
            message_id=request.message_id,
            recipient=email,
            context={} if erased else request.context,
            now=int(self.clock()),
            lease_seconds=self.settings.lease_seconds,
            ttl_seconds=self.settings.ttl_days * 86400,
            subject=composed.subject if composed and not erased else "",
            template_key=composed.template_key if composed else "",
            template_version=composed.template_version if composed else "",
            producer=request.namespace,
            dedupe_id="" if erased else request.dedupe_id,
        )

    def _not_sent(
        self, verdict: Verdict, claim: Claim, request: EmailRequest, log: EventLog
    ) -> _Result:
        """A policy's answer other than SEND: a hold waits unclaimed and writes nothing; a
        log-only or suppressed one is journaled (conditionally: never over a SENT row), and
        email.not_delivered goes out once, only when this write recorded it."""
        key = claim.key
        if verdict.kind is Kind.HOLD:
            return _Result(_Kind.WAIT, key, verdict.detail, wait_until=verdict.until)
        reason = LogOnlyReason.SUPPRESSED if verdict.kind is Kind.SUPPRESSED else verdict.reason
        event = not_delivered_event(key, reason=reason.value, at=self.clock())
        if verdict.kind is Kind.SUPPRESSED:
            written = self.journal.record_suppressed(claim, reason=verdict.detail, events=(event,))
            log.info("recipient.suppressed", reason=verdict.detail, written=written)
            if written:
                self._count(request, log, suppressed=1)
        else:
            written = self.journal.record_logged_only(
                claim, reason=reason, detail=verdict.detail, events=(event,)
            )
            level = logging.WARNING if verdict.loud else logging.INFO
            log.log(level, "recipient.logged_only", reason=reason.value, written=written)
        if written:
            self._emit(event, log)
        return _Result(_Kind.SUPPRESSED, key, verdict.detail)

    def _release(self, key: str, attempt: int, log: EventLog) -> None:
        try:
            self.journal.release_claim(key, attempt=attempt)
        except EmailOpsError as exc:  # the lease ends by itself
            log.warning("release_claim.failed", error=exc.describe())

    def _mark_failed(self, key: str, attempt: int, exc: EmailOpsError, log: EventLog) -> bool:
        """Whether the FAILED mark was stored (the change is ours to count)."""
        failed = failed_event(
            key,
            error=exc.describe(),
            error_kind=type(exc).__name__,
            permanent=exc.permanent,
            at=self.clock(),
        )
        try:
            if self.journal.mark_failed(
                key,
                attempt=attempt,
                error=exc.describe(),
                kind=type(exc).__name__,
                permanent=exc.permanent,
                events=(failed,),
            ):
                self._emit(failed, log)
                return True
            log.warning("mark_failed.lease_lost", attempt=attempt)
        except EmailOpsError as exc:
            log.error("mark_failed.failed", error=exc.describe())
        return False

    def _emit(self, event: WebhookEvent, log: EventLog) -> None:
        """Wake the webhooks, after the write that stored the fact and its event (so a duplicate
        record emits nothing). Never fails or slows a send: a lost wake-up is logged, and the
        outbox's sweep delivers the event."""
        try:
            self.outbox.emit(event)
        except Exception as exc:
            log.warning("webhook.not_emitted", eventType=event.type, error=repr(exc))

    def _count(self, request: EmailRequest, log: EventLog, **counts: int) -> None:
        """Add to the reputation counters; a failure costs a count, never a send or a retry."""
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
        key = dedupe_key(request, address)  # not an address: no tombstone to look up
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
            try:
                journalled = self._journalled(address)
            except EmailOpsError as exc:
                log.error("record_failure.failed", error=exc.describe())
                unwritten.add(dedupe_key(request, address))
                continue
            key = dedupe_key(request, journalled)
            if only is not None and key not in only:
                continue
            rlog = log.bind(recipient=journalled, key=key)
            # No exception: a refused recipient (permanent) or a spent retry budget.
            kind = type(failure).__name__ if failure else ""
            permanent = failure.permanent if failure else None
            failed = failed_event(
                key, error=error, error_kind=kind, permanent=permanent, at=self.clock()
            )
            try:
                written = self.journal.record_failure(
                    self._claim(request, journalled, key, None),
                    error=error,
                    kind=kind,
                    permanent=permanent,
                    events=(failed,),
                )
            except EmailOpsError as exc:
                rlog.error("record_failure.failed", error=exc.describe())
                unwritten.add(key)
                continue
            if written:
                self._count(request, rlog, failed=1)
                self._emit(failed, rlog)
            rlog.info(
                "recipient.failed" if written else "recipient.failure_not_recorded",
                error=error,
                reason=None if written else "row is SENT or claimed",
            )
        return unwritten
