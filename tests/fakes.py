"""In-memory stand-ins for the core's ports: they record calls and keep the journal's rules."""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any

from emailops.aws.journal_codec import (
    failure_attributes,
    logged_only_attributes,
    row_from_item,
    stored_row,
)
from emailops.core.errors import EmailOpsError, ForeignRow, TransientError
from emailops.core.journal_row import JournalRow
from emailops.core.log_only import LogOnlyReason
from emailops.core.ports import (
    Claim,
    ClaimResult,
    ClaimState,
    OutgoingEmail,
    Status,
    TemplateMapping,
)
from emailops.core.reputation import GateDecision
from emailops.core.stored_attributes import StoredRow
from emailops.core.template_cache import TemplateFetch


class DictMappings:
    def __init__(self, *mappings: TemplateMapping) -> None:
        self.rows = {m.message_id: m for m in mappings}
        self.error: EmailOpsError | None = None

    def get_mapping(self, message_id: str) -> TemplateMapping | None:
        if self.error:
            raise self.error
        return self.rows.get(message_id)


class DictTemplates:
    def __init__(self, templates: dict[str, str] | None = None) -> None:
        self.templates = dict(templates or {})
        self.reads: list[str] = []
        self.error: EmailOpsError | None = None

    def read_template(self, key: str) -> str | None:
        self.reads.append(key)
        if self.error:
            raise self.error
        return self.templates.get(key)


class EtagTemplates(DictTemplates):
    """DictTemplates that also answers conditional reads, as S3 does (ETag = a content hash)."""

    def __init__(self, templates: dict[str, str] | None = None) -> None:
        super().__init__(templates)
        self.fetches: list[tuple[str, str | None]] = []  # (key, if_none_match)

    @staticmethod
    def etag(source: str) -> str:
        return f'"{hashlib.md5(source.encode()).hexdigest()}"'

    def fetch_template(self, key: str, *, if_none_match: str | None = None) -> TemplateFetch:
        self.fetches.append((key, if_none_match))
        if self.error:
            raise self.error
        source = self.templates.get(key)
        if source is None:
            return TemplateFetch(None)
        if if_none_match == self.etag(source):
            return TemplateFetch(None, if_none_match, not_modified=True)
        return TemplateFetch(source, self.etag(source), version=self.etag(source).strip('"'))


class InMemoryJournal:
    """The DynamoDB journal's claim rules, over a dict."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        # operation name → an error to raise once, or a list of errors to raise in turn
        self.fail_next: dict[str, EmailOpsError | list[EmailOpsError]] = {}
        # the webhook events each write that succeeded stored with its fact (the durable outbox)
        self.outboxed: list[Any] = []

    def _outbox(self, written: bool, events: Any) -> bool:
        if written:
            self.outboxed.extend(events)
        return written

    def _maybe_fail(self, operation: str) -> None:
        planned = self.fail_next.get(operation)
        if isinstance(planned, list):
            if planned:
                raise planned.pop(0)
        elif planned is not None:
            raise self.fail_next.pop(operation)

    def _claimable(self, row: dict[str, Any] | None, claim: Claim) -> bool:
        if row is None or row["Status"] == Status.FAILED:
            return True
        if row["Status"] != Status.QUEUED:
            return False
        return claim.lease.stuck(row_from_item(row), now=claim.now)

    def _values(self, claim: Claim, status: Status) -> dict[str, Any]:
        return {
            "Id": claim.key,
            "MessageId": claim.message_id,
            "Recipient": claim.recipient,
            "Status": status,
            "Timestamp": claim.now,
            "Context": claim.context,
            "Subject": claim.subject,
            "TemplateKey": claim.template_key,
            "TemplateVersion": claim.template_version,
            "ExpiresAt": claim.now + claim.ttl_seconds,
        } | ({"Producer": claim.producer} if claim.producer else {})

    @staticmethod
    def _kept(row: dict[str, Any] | None) -> dict[str, Any]:
        """What a rewrite of the row keeps, as DynamoDB's UpdateItem does: the claim count and
        the sends noted after lost claims."""
        return {k: row[k] for k in ("Attempts", "ExtraSends") if row and k in row}

    @staticmethod
    def _foreign(row: dict[str, Any] | None, claim: Claim) -> bool:
        """The row exists and another producer wrote it (the adapter's ownership condition)."""
        return row is not None and row.get("Producer", "") != claim.producer

    def claim(self, claim: Claim) -> ClaimResult:
        self._maybe_fail("claim")
        with self.lock:
            row = self.rows.get(claim.key)
            if self._foreign(row, claim):
                raise ForeignRow("claim journal row", key=claim.key, reason="another producer's")
            if not self._claimable(row, claim):
                if row["Status"] in (Status.SENT, Status.SUPPRESSED):
                    return ClaimResult(ClaimState.ALREADY_SENT)
                lease = claim.lease.ends_at(row_from_item(row))
                if lease is None:  # the row does not say when it was claimed: as if just now
                    lease = claim.lease_ends_at
                return ClaimResult(ClaimState.IN_PROGRESS, lease_ends_at=lease)
            attempts = (row or {}).get("Attempts", 0) + 1
            self.rows[claim.key] = (
                self._values(claim, Status.QUEUED)
                | self._kept(row)
                | {
                    "ClaimExpiresAt": claim.lease_ends_at,
                    "Attempts": attempts,
                }
            )
            return ClaimResult(ClaimState.CLAIMED, attempt=attempts)

    def _mark(self, key: str, attempt: int, **changes: Any) -> bool:
        with self.lock:
            row = self.rows.get(key)
            if not row or row["Status"] != Status.QUEUED or row.get("Attempts") != attempt:
                return False
            row.update(changes)
            return True

    def mark_sent(
        self, key: str, *, attempt: int, provider_id: str, sent_at: int, events: Any = ()
    ) -> bool:
        return self._outbox(self._mark_sent(key, attempt, provider_id), events)

    def _mark_sent(self, key: str, attempt: int, provider_id: str) -> bool:
        self._maybe_fail("mark_sent")
        with self.lock:
            row = self.rows.get(key)
            if row and (row["Status"], row.get("Attempts"), row.get("SesMessageId")) == (
                Status.SENT,
                attempt,
                provider_id,
            ):
                return True  # a retry of a mark that landed, as the adapter's condition allows
        return self._mark(key, attempt, Status=Status.SENT, SesMessageId=provider_id)

    def mark_failed(
        self,
        key: str,
        *,
        attempt: int,
        error: str,
        kind: str = "",
        permanent: bool | None = None,
        events: Any = (),
    ) -> bool:
        self._maybe_fail("mark_failed")
        failure = failure_attributes(error, kind=kind, permanent=permanent)
        return self._outbox(self._mark(key, attempt, Status=Status.FAILED, **failure), events)

    def mark_accepted(self, key: str, *, provider_id: str, sent_at: int, events: Any = ()) -> bool:
        self._maybe_fail("mark_accepted")
        with self.lock:
            row = self.rows.get(key)
            if row and row["Status"] != Status.SENT:
                row.update(Status=Status.SENT, SesMessageId=provider_id)
                row.pop("Error", None)
                return self._outbox(True, events)
            return False

    def note_extra_send(self, key: str, *, attempt: int, provider_id: str, sent_at: int) -> None:
        self._maybe_fail("note_extra_send")
        with self.lock:
            row = self.rows.get(key)
            if row is not None:
                entry = {"SesMessageId": provider_id, "Attempt": attempt, "At": sent_at}
                row["ExtraSends"] = [*row.get("ExtraSends", []), entry]

    def extend_claim(self, key: str, *, attempt: int, until: int) -> bool:
        self._maybe_fail("extend_claim")
        return self._mark(key, attempt, ClaimExpiresAt=until)

    def release_claim(self, key: str, *, attempt: int) -> bool:
        self._maybe_fail("release_claim")
        return self._mark(key, attempt, ClaimExpiresAt=0)

    def record_failure(
        self,
        claim: Claim,
        *,
        error: str,
        kind: str = "",
        permanent: bool | None = None,
        events: Any = (),
    ) -> bool:
        self._maybe_fail("record_failure")
        with self.lock:
            row = self.rows.get(claim.key)
            if self._foreign(row, claim) or not self._claimable(row, claim):
                return False
            failure = failure_attributes(error, kind=kind, permanent=permanent)
            self.rows[claim.key] = self._values(claim, Status.FAILED) | self._kept(row) | failure
            return self._outbox(True, events)

    def record_logged_only(
        self, claim: Claim, *, reason: LogOnlyReason, detail: str, events: Any = ()
    ) -> bool:
        with self.lock:
            row = self.rows.get(claim.key)
            if self._foreign(row, claim) or not self._claimable(row, claim):
                return False
            attributes = logged_only_attributes(reason.value, detail, at=claim.now)
            self.rows[claim.key] = self._values(claim, Status.SENT) | self._kept(row) | attributes
            return self._outbox(True, events)

    def record_suppressed(self, claim: Claim, *, reason: str, events: Any = ()) -> bool:
        with self.lock:
            row = self.rows.get(claim.key)
            if self._foreign(row, claim) or not self._claimable(row, claim):
                return False
            failure = failure_attributes(reason, kind="Suppressed", permanent=True)
            self.rows[claim.key] = (
                self._values(claim, Status.SUPPRESSED) | self._kept(row) | failure
            )
            return self._outbox(True, events)

    def read(self, key: str) -> JournalRow | None:
        """The reader port (``JournalReader``), as DynamoJournal.read."""
        with self.lock:
            row = self.rows.get(key)
            return row_from_item({"Id": key} | row) if row is not None else None

    def read_stored(self, key: str) -> StoredRow | None:
        with self.lock:
            row = self.rows.get(key)
            return stored_row({"Id": key} | row) if row is not None else None


@dataclass
class RecordingSender:
    sent: list[OutgoingEmail] = field(default_factory=list)
    errors: list[EmailOpsError] = field(default_factory=list)  # raised, in order, before succeeding

    def send(self, email: OutgoingEmail, *, before_send=None) -> str:
        if before_send is not None:
            before_send()  # as SES's sender does: after the request is built, before it leaves
        if self.errors:
            raise self.errors.pop(0)
        self.sent.append(email)
        return f"ses-{len(self.sent)}"


class InMemoryStats:
    """The reputation counters (emailops.core.ports.Stats) as a dict: (scope, hour) → counts.
    ``fail`` makes every add raise (a DynamoDB outage)."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], dict[str, int]] = {}
        self.fail: Exception | None = None
        self.lock = threading.Lock()

    def add(
        self, *, message_id: str, organization: str | None, hour: str, counts: dict[str, int]
    ) -> None:
        if self.fail is not None:
            raise self.fail
        scopes = ["account", f"message#{message_id}"] + (
            [f"org#{organization}"] if organization else []
        )
        with self.lock:
            for scope in scopes:
                item = self.items.setdefault((scope, hour), {})
                for name, n in counts.items():
                    if n:
                        item[name] = item.get(name, 0) + n

    def flush(self) -> None:
        """Nothing is held: every add lands at once."""

    def totals(self, scope: str = "account") -> dict[str, int]:
        found: dict[str, int] = {}
        for (item_scope, _), counts in self.items.items():
            if item_scope == scope:
                for name, n in counts.items():
                    found[name] = found.get(name, 0) + n
        return found


class FixedGate:
    """The reputation guard's word (emailops.core.ports.ReputationGate), set by the test:
    priority → (GateDecision, reason); anything else goes."""

    def __init__(self, decisions: dict[str, tuple[Any, str]] | None = None) -> None:
        self.decisions = decisions or {}
        self.asked: list[tuple[str, str | None]] = []

    def decide(self, *, priority: str, organization: str | None) -> tuple[Any, str]:
        self.asked.append((priority, organization))
        return self.decisions.get(priority, (GateDecision.GO, ""))


@dataclass
class SetSuppressionIndex:
    """The shared set index (the tombstones' ``SuppressionIndex``) in memory (one shared by every "consumer" of a test); ``down``
    makes every call raise IndexUnavailable, ``complete`` False makes lookups IndexIncomplete."""

    members: set[str] = field(default_factory=set)
    complete: bool = False
    down: bool = False
    lookups: int = 0

    def _check(self) -> None:
        from emailops.core.suppression_index import IndexUnavailable

        if self.down:
            raise IndexUnavailable("index down")

    def contains(self, address: str) -> bool:
        from emailops.core.suppression_index import IndexIncomplete

        self._check()
        self.lookups += 1
        if not self.complete:
            raise IndexIncomplete("not built")
        return address in self.members

    def added(self, address: str) -> None:
        self._check()
        self.members.add(address)

    def removed(self, address: str) -> None:
        self._check()
        self.members.discard(address)

    def rebuild(self, addresses) -> bool:
        self._check()
        self.members = set(addresses())
        self.complete = True
        return True


class InMemoryRateCounters:
    """The ``email-rate-counter`` table (emailops.core.send_guard.RateCounters) as dicts;
    ``down`` makes every call raise, as an unreachable table does."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.copies: dict[str, set[str]] = {}
        self.over: dict[str, int] = {}
        self.holds: dict[str, int] = {}  # bucket -> first held at
        self.held_for: dict[str, object] = {}  # bucket -> HeldRecipient
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise TransientError("count a send (rate safeguard)", reason="unreachable")

    def increment(self, bucket: str, *, expires_at: int, by: int = 1) -> int:
        self._check()
        self.counts[bucket] = self.counts.get(bucket, 0) + by
        return self.counts[bucket]

    def reserve(self, bucket: str, n: int, *, cap: int, expires_at: int) -> int:
        self._check()
        granted = max(0, min(n, cap - self.counts.get(bucket, 0)))
        if granted:
            self.counts[bucket] = self.counts.get(bucket, 0) + granted
        return granted

    def note_copy(self, bucket: str, member: str, *, limit: int, expires_at: int):
        from emailops.core.send_guard import LoopCount

        self._check()
        copies = self.copies.setdefault(bucket, set())
        if member in copies or len(copies) < limit:
            copies.add(member)
            return LoopCount(within=True)
        self.over[bucket] = self.over.get(bucket, 0) + 1
        return LoopCount(within=False, over=self.over[bucket])

    def note_hold(self, bucket, *, message_id, why, now, until, expires_at, recipient=None) -> int:
        self._check()
        self.held_for[bucket] = recipient
        return self.holds.setdefault(bucket, now)

    def forget_hold(self, bucket: str) -> None:
        self._check()
        self.holds.pop(bucket, None)


class RecordingOutbox:
    """The webhook outbox, recording what was emitted (``fail``: every emit raises)."""

    def __init__(self, *, fail: bool = False) -> None:
        self.events: list = []
        self.fail = fail

    def emit(self, event) -> None:
        if self.fail:
            raise ConnectionError("broker unreachable")
        self.events.append(event)
