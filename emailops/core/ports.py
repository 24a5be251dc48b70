"""The small interfaces the core is written against, and the values that cross them.

Adapters in ``emailops.aws`` implement these against DynamoDB, S3 and SES; tests use in-memory fakes.
Adapters raise only the core's exceptions (``emailops.core.errors``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from emailops.core.journal_row import JournalRow, Status  # Status: the row's, named here too
from emailops.core.lease import LeasePolicy
from emailops.core.stored_attributes import StoredRow

if TYPE_CHECKING:
    from emailops.core.log_only import LogOnlyReason
    from emailops.core.send_guard import GuardVerdict
    from emailops.core.webhook_event import WebhookEvent

__all__ = [
    "Claim",
    "ClaimResult",
    "ClaimState",
    "Journal",
    "MappingStore",
    "OutgoingEmail",
    "ReputationGate",
    "SendGuard",
    "SendRateLimiter",
    "Sender",
    "Stats",
    "Status",
    "SuppressionList",
    "SuppressionWriter",
    "TemplateMapping",
    "TemplateStore",
    "custom_template_key",
    "default_template_key",
]


@dataclass(frozen=True)
class TemplateMapping:
    """A row of the templates table: which template file and default subject a messageId uses."""

    message_id: str
    template_file: str
    subject: str
    # Console bookkeeping, stored as extra attributes the Go consumer ignores.
    version: int = 0
    updated_by: str = ""
    updated_at: str = ""
    # critical | normal | bulk (emailops.core.reputation.Priority): what the reputation guard
    # holds back when the rates are bad. The Go consumer ignores it.
    priority: str = "normal"
    # SendDisabled (BOOL), which the Go service's send controls read too: the messageId is
    # journaled log-only, never sent.
    send_disabled: bool = False
    # Category (S, a slug; "" = uncategorised, transactional): what a recipient may unsubscribe
    # from (docs/preferences.md). The Go service ignores it. Critical mail is never held by it.
    category: str = ""


def default_template_key(template_file: str) -> str:
    return f"default/{template_file}"


def custom_template_key(organization_id: str, template_file: str) -> str:
    return f"custom/O{organization_id}/{template_file}"


@dataclass(frozen=True)
class Claim:
    """Everything a journal row records about one (request, recipient) when it is claimed."""

    key: str
    message_id: str
    recipient: str
    context: dict[str, Any]
    now: int  # epoch seconds
    lease_seconds: int  # the process's LeasePolicy's (Container.lease_policy)
    ttl_seconds: int
    subject: str = ""
    template_key: str = ""
    template_version: str = ""  # which published version of template_key was rendered
    # Who may own the row ("" on the queue path): a namespaced producer's claim never takes,
    # overwrites or reports a row another producer wrote.
    producer: str = ""
    dedupe_id: str = ""  # the request's, when it gave one (the webhooks report it)

    @property
    def lease(self) -> LeasePolicy:
        """The lease rule this claim is taken under: its own end, and when another's ended."""
        return LeasePolicy(self.lease_seconds)

    @property
    def lease_ends_at(self) -> int:
        return self.lease.claim_ends_at(self.now)


class ClaimState(Enum):
    CLAIMED = "claimed"  # ours to send; `attempt` identifies our claim
    ALREADY_SENT = "already-sent"  # a duplicate delivery (or a SUPPRESSED row): skip
    IN_PROGRESS = "in-progress"  # another consumer holds a live lease until `lease_ends_at`


@dataclass(frozen=True)
class ClaimResult:
    state: ClaimState
    attempt: int = 0
    lease_ends_at: int = 0


@dataclass(frozen=True)
class OutgoingEmail:
    from_address: str
    to: str  # an RFC 5322 address, display name included when known
    subject: str
    html: str
    text: str = ""
    reply_to: tuple[str, ...] = field(default_factory=tuple)
    # The journal row's key; the sender tags the email with it so delivery events find the row
    # even when SES's reply to the send was lost.
    journal_key: str = ""
    # Extra headers, (name, value), each one line: List-Unsubscribe and List-Unsubscribe-Post on
    # mail a recipient may refuse (RFC 8058). Empty for every other email.
    headers: tuple[tuple[str, str], ...] = ()


class MappingStore(Protocol):
    def get_mapping(self, message_id: str) -> TemplateMapping | None: ...


class TemplateStore(Protocol):
    def read_template(self, key: str) -> str | None:
        """The template source at ``key``, or None when no such object exists."""
        ...


class Journal(Protocol):
    """Every write that records a fact a webhook reports takes the events it implies
    (``events``): stored with the fact in one write (the durable outbox) when the adapter has an
    outbox, else ignored (WEBHOOK_OUTBOX=off). A write that returns False stored none."""

    def claim(self, claim: Claim) -> ClaimResult:
        """Conditionally take the row: no row, FAILED, or QUEUED with an ended lease."""
        ...

    def mark_sent(
        self,
        key: str,
        *,
        attempt: int,
        provider_id: str,
        sent_at: int,
        events: Sequence[WebhookEvent] = (),
    ) -> bool:
        """Record the send if claim ``attempt`` is still ours; False when it is not."""
        ...

    def mark_failed(
        self,
        key: str,
        *,
        attempt: int,
        error: str,
        kind: str = "",
        permanent: bool | None = None,
        events: Sequence[WebhookEvent] = (),
    ) -> bool:
        """Record a failed send if claim ``attempt`` is still ours; False when it is not.
        ``kind`` and ``permanent`` are stored on the row as data (ErrorKind, Permanent)."""
        ...

    def mark_accepted(
        self, key: str, *, provider_id: str, sent_at: int, events: Sequence[WebhookEvent] = ()
    ) -> bool:
        """Mark SENT a send an earlier attempt made but could not mark, whoever holds the row
        now (SES accepted it: it is sent). A row already SENT is left alone: False."""
        ...

    def note_extra_send(self, key: str, *, attempt: int, provider_id: str, sent_at: int) -> None:
        """Append a send made under claim ``attempt`` after that claim was lost to the row's
        ``ExtraSends``, changing nothing else: the row's outcome belongs to whoever holds it."""
        ...

    def extend_claim(self, key: str, *, attempt: int, until: int) -> bool:
        """Push claim ``attempt``'s lease to ``until`` while it is still ours."""
        ...

    def release_claim(self, key: str, *, attempt: int) -> bool:
        """End claim ``attempt``'s lease now, leaving the row QUEUED (claimable, not FAILED)."""
        ...

    def record_failure(
        self,
        claim: Claim,
        *,
        error: str,
        kind: str = "",
        permanent: bool | None = None,
        events: Sequence[WebhookEvent] = (),
    ) -> bool:
        """Write a FAILED row for a request that failed before sending, unless the row is SENT
        or under a live claim; False when it was left alone."""
        ...

    def record_logged_only(
        self,
        claim: Claim,
        *,
        reason: LogOnlyReason,
        detail: str,
        events: Sequence[WebhookEvent] = (),
    ) -> bool:
        """Journal the recipient as not sent, as the Go service's send controls do (SENT,
        ``LoggedOnly``, no SES id) with why, under the claim's condition; False when it was left
        alone (already SENT: a duplicate delivery)."""
        ...

    def record_suppressed(
        self, claim: Claim, *, reason: str, events: Sequence[WebhookEvent] = ()
    ) -> bool:
        """Write a SUPPRESSED row (never sent: the address is suppressed), under the same
        condition as record_failure; False when it was left alone."""
        ...


class SendSwitch(Protocol):
    """The console's emergency stop: why sending is stopped for the whole service, or None."""

    def stop_reason(self) -> str | None: ...


class JournalReader(Protocol):
    """Typed reads of single journal rows, for the console and the API (never raw items)."""

    def read(self, key: str) -> JournalRow | None:
        """The row at ``key``, or None."""
        ...

    def read_stored(self, key: str) -> StoredRow | None:
        """The row at ``key`` and its attributes as stored (for the support view), or None."""
        ...


class SuppressionList(Protocol):
    def suppression_reason(self, address: str) -> str | None:
        """Why ``address`` must not be sent to (hard bounce, complaint...), or None."""
        ...


class SuppressionWriter(Protocol):
    """Where an address is suppressed (the events consumer's bounces and complaints)."""

    def add(
        self,
        address: str,
        *,
        reason: str,
        detail: str,
        source: str,
        now: int,
        also: tuple[str, ...] = (),
    ) -> bool:
        """Suppress ``address`` (``also``: other spellings of the same mailbox to write); False
        when it was suppressed already."""
        ...


class SendRateLimiter(Protocol):
    """One send rate shared by every consumer (emails per second)."""

    def acquire(self) -> float:
        """Block until one email may go; return the seconds waited.

        Raises DailyQuotaExceeded while sending is paused for the 24-hour quota.
        """
        ...

    def on_throttled(self) -> None:
        """SES said "Maximum sending rate exceeded": lower the shared rate (AIMD)."""
        ...

    def on_daily_quota_exceeded(self) -> None:
        """SES said "Daily message quota exceeded": pause sending for a while."""
        ...


class Sender(Protocol):
    def send(self, email: OutgoingEmail, *, before_send: Callable[[], None] | None = None) -> str:
        """Send one email; return the provider's message id.

        ``before_send`` runs once, after the request is built and signed and right before it
        leaves; what it raises propagates and nothing is sent. The send rate's wait goes there,
        so the time from a send slot to the provider is the network's alone, not the SDK's CPU.
        """
        ...


class Stats(Protocol):
    """The reputation counters (``emailops.core.reputation``): hourly, per account, messageId and
    organization. Called only after the journal write that makes the change succeeded."""

    def add(
        self, *, message_id: str, organization: str | None, hour: str, counts: dict[str, int]
    ) -> None: ...

    def flush(self) -> None:
        """Write the counts still held in memory (a stop, an idle second); a no-op if none."""
        ...


class ReputationGate(Protocol):
    """The reputation guard's word on one send, from the state every consumer shares."""

    def decide(self, *, priority: str, organization: str | None) -> tuple[Any, str]:
        """(an ``emailops.core.reputation.GateDecision``, the reason)."""
        ...


class SendGuard(Protocol):
    """Consulted per recipient after the suppression lookup and before the claim (the rate
    safeguard and the loop detector, ``emailops.core.send_guard.Safeguard``)."""

    def check(self, *, message_id: str, recipient: str, key: str, now: float) -> GuardVerdict:
        """Allow, hold until a time, or log-only with a reason; never raises for AWS trouble."""
        ...

    def refund(self, verdict: GuardVerdict, *, now: float) -> None:
        """An allowed recipient was not sent after all (a duplicate, another's claim)."""
        ...

    def settle(self, now: float, *, everything: bool = False) -> None:
        """Give back reserved sends left unspent (ended windows; ``everything``: all)."""
        ...
