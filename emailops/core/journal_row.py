"""One journal row, typed: what the pipeline, the events path, the console and the API know about an
email to one recipient. The DynamoDB layout (attribute names) is the adapter's business
(``emailops.aws.journal_codec``); above it, code reads these fields.

When a QUEUED row's claim ends is not the row's to say alone: ``emailops.core.lease.LeasePolicy``
reads ``claim_expires_at`` and ``timestamp`` (a Go-era row has no ``ClaimExpiresAt``) with the one
lease length.

The row carries no bag of raw attributes: what the support view lists as stored comes from the
reader as its own typed value (``emailops.core.stored_attributes``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

__all__ = ["DeliveryState", "ExtraSend", "JournalRow", "Status", "TimelineEntry"]


class Status(StrEnum):
    QUEUED = "QUEUED"
    SENT = "SENT"
    FAILED = "FAILED"
    # Never sent: the address is on the suppression list. Not claimable, by us or the Go consumer.
    SUPPRESSED = "SUPPRESSED"


@dataclass(frozen=True)
class DeliveryState:
    """What SES reported after accepting the email (the winning event), as stored on the row.

    ``status``: DELIVERED | BOUNCED | COMPLAINED | DELAYED | REJECTED, or "" (no report)."""

    status: str = ""
    at: str = ""  # SES's timestamp of the winning event
    bounce_type: str = ""  # Permanent | Transient | Undetermined
    bounce_subtype: str = ""  # NoEmail, General, MailboxFull...
    diagnostic: str = ""  # the receiving server's reply, as SES gave it
    status_code: str = ""  # its enhanced status code (RFC 3463), e.g. "5.1.1"
    complaint_type: str = ""  # the complaint's feedback type (abuse...)
    order: int = 0  # the winning event's rank and time, as one number (DeliveryOrder)
    event_count: int = 0  # events applied so far: the events write's concurrency guard

    @property
    def permanent_bounce(self) -> bool:
        return self.status == "BOUNCED" and self.bounce_type == "Permanent"


@dataclass(frozen=True)
class TimelineEntry:
    """One SES event on the row's timeline (oldest first). ``summary`` is the words stored when it
    was applied (rows written before the structured facts were stored have only those)."""

    type: str
    at: str
    id: str
    summary: str = ""


class ExtraSend(NamedTuple):
    """A send SES accepted after its claim was lost (another consumer's send is the row's)."""

    ses_message_id: str
    attempt: int
    at: str


@dataclass(frozen=True)
class JournalRow:
    key: str
    message_id: str = ""
    recipient: str = ""
    status: str = ""  # a Status value; a foreign writer's unknown status is kept as written
    timestamp: int | None = None  # when the row was claimed or written (epoch seconds)
    message_sent: str = ""  # when SES accepted it (RFC 3339)
    ses_message_id: str = ""
    error: str = ""  # the failure (or suppression reason) as recorded
    error_kind: str = ""  # which failure (an exception class); "" on Go rows and older rows
    permanent: bool | None = None  # whether retrying cannot help; None: the row does not say
    claim_expires_at: int | None = None  # ours only; a Go row has none
    attempts: int = 0
    subject: str = ""
    template_key: str = ""
    template_version: str = ""
    producer: str = ""
    dedupe_id: str = ""  # the request's dedupeId (ours only; "" on Go rows and older ones)
    logged_only: bool = False  # journaled, not sent (Go's send controls); SENT, no SES id
    logged_only_reason: str = ""  # a LogOnlyReason value; "" on Go-written rows
    logged_only_detail: str = ""
    context: Mapping[str, Any] = field(default_factory=dict)
    context_trimmed: int = 0  # the context's original size when it was trimmed
    expires_at: int | None = None
    delivery: DeliveryState = field(default_factory=DeliveryState)
    timeline: tuple[TimelineEntry, ...] = ()
    extra_sends: tuple[ExtraSend, ...] = ()
    # The row's index keys as written (the address's one spelling; the claim time, 20 digits):
    # read for showing the row as stored (the API answers them), never for meaning.
    recipient_key: str = ""
    sent_at_key: str = ""

    @property
    def queued(self) -> bool:
        return self.status == Status.QUEUED.value
