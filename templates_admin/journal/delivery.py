"""What happened after SES accepted an email, in plain words, from the journal row's delivery
attributes (written by ``consume_ses_events``): DeliveryStatus, DeliveryStatusAt, BounceType,
BounceSubType, DiagnosticCode and the DeliveryEvents timeline.

Shared by the console pages, the CSV export and ``email_log``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.utils import timezone

from emailops.core.ports import Status

__all__ = [
    "DELIVERY_STATUSES",
    "DeliveryOutcome",
    "TimelineEvent",
    "bounce_reason",
    "delivery_outcome",
    "iso_local_text",
    "timeline",
]

DELIVERY_STATUSES = ("DELIVERED", "BOUNCED", "COMPLAINED", "DELAYED", "REJECTED")

# SES's bounce subtypes that say everything on their own.
_SUBTYPE_WORDS = {
    ("Permanent", "NoEmail"): "address does not exist",
    ("Permanent", "Suppressed"): "on SES's suppression list",
    ("Permanent", "OnAccountSuppressionList"): "on SES's suppression list (this account's)",
    ("Permanent", "UnsubscribedRecipient"): "the recipient unsubscribed",
    ("Transient", "MailboxFull"): "mailbox full (temporary)",
    ("Transient", "MessageTooLarge"): "message too large (temporary)",
    ("Transient", "ContentRejected"): "content refused by the recipient's server (temporary)",
    ("Transient", "AttachmentRejected"): "attachment refused by the recipient's server (temporary)",
}

# A "General" bounce says why only in the receiving server's reply: its enhanced status code
# (RFC 3463: "5.1.1") when there is one, else common wording (first match wins).
_ENHANCED_CODE = re.compile(r"\b[45]\.(\d{1,3}\.\d{1,3})\b")
_CODE_WORDS = {
    "1.1": "mailbox does not exist",
    "1.2": "the address's domain does not receive email",
    "1.3": "the address is malformed",
    "1.10": "the address's domain does not receive email",
    "2.1": "mailbox disabled",
    "2.2": "mailbox full",
    "3.4": "message too large",
    "4.4": "the address's domain could not be reached",
}
_POLICY = "refused by the recipient's server (policy or spam filter)"
_WORDING: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), words)
    for pattern, words in (
        (r"host not found|domain (not found|does not exist)|no mx|unrouteable",
         "the address's domain does not receive email"),
        (r"user unknown|unknown user|no such user|does not exist|no mailbox|"
         r"mailbox unavailable|recipient (address )?rejected|invalid recipient",
         "mailbox does not exist"),
        (r"mailbox full|over quota|quota exceeded|insufficient storage", "mailbox full"),
        (r"disabled|inactive|suspended", "mailbox disabled"),
        (r"spam|blocked|blacklist|blocklist|policy|denied", _POLICY),
        (r"too large|size limit", "message too large"),
    )
)  # fmt: skip


def _diagnose(diagnostic: str) -> str | None:
    code = _ENHANCED_CODE.search(diagnostic)
    if code:
        detail = code.group(1)
        if detail in _CODE_WORDS:
            return _CODE_WORDS[detail]
        if detail.startswith("7."):
            return _POLICY
    return next((words for pattern, words in _WORDING if pattern.search(diagnostic)), None)


def bounce_reason(bounce_type: str | None, sub_type: str | None, diagnostic: str | None) -> str:
    """Why it bounced, in a few words: "mailbox does not exist", "mailbox full (temporary)"..."""
    bounce_type, sub_type = (bounce_type or "").strip(), (sub_type or "").strip()
    words = _SUBTYPE_WORDS.get((bounce_type, sub_type))
    if words:
        return words
    if bounce_type == "Undetermined":
        return "SES could not tell why (undetermined bounce)"
    diagnosed = _diagnose(diagnostic or "")
    if bounce_type == "Transient":
        return f"{diagnosed} (temporary)" if diagnosed else "temporary delivery problem"
    if diagnosed:
        return diagnosed
    if bounce_type == "Permanent":
        return "the recipient's server refused it for good"
    return "reason not reported"


def _parse_iso(text: Any) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def iso_local_text(text: Any) -> str:
    """An SES timestamp ("2026-11-30T14:31:27.123Z") in the console's zone; as given if unreadable."""
    moment = _parse_iso(text)
    if moment is None:
        return str(text or "")
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M:%S %Z")


def _iso_utc_text(text: Any) -> str:
    moment = _parse_iso(text)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if moment else ""


@dataclass(frozen=True)
class DeliveryOutcome:
    """One line for "did they get it?": ``text`` is what a result list shows."""

    state: str  # delivered, bounced, complained, delayed, rejected, suppressed, no-report
    tone: str  # ok, pending, warning or error (the console's colours)
    text: str  # "bounced: mailbox does not exist"
    at: str = ""  # when SES reported it, in the console's zone
    at_utc: str = ""
    bounce: str = ""  # "Permanent/General" for bounces
    diagnostic: str = ""  # the receiving server's reply, as SES gave it


def delivery_outcome(row: dict[str, Any]) -> DeliveryOutcome | None:
    """The row's delivery outcome; None while there is none to tell (QUEUED, FAILED)."""
    status = row.get("Status")
    delivery = str(row.get("DeliveryStatus") or "").upper()
    if status == Status.SUPPRESSED:
        why = " ".join(str(row.get("Error") or "").split()) or "the address is suppressed"
        return DeliveryOutcome("suppressed", "warning", f"suppressed: never sent ({why})")
    at = row.get("DeliveryStatusAt")
    when = {"at": iso_local_text(at) if at else "", "at_utc": _iso_utc_text(at)}
    if delivery == "DELIVERED":
        return DeliveryOutcome("delivered", "ok", "delivered", **when)
    if delivery == "BOUNCED":
        bounce_type = str(row.get("BounceType") or "")
        reason = bounce_reason(bounce_type, row.get("BounceSubType"), row.get("DiagnosticCode"))
        return DeliveryOutcome(
            "bounced",
            "warning" if bounce_type == "Transient" else "error",
            f"bounced: {reason}",
            bounce="/".join(str(p) for p in (row.get("BounceType"), row.get("BounceSubType")) if p),
            diagnostic=str(row.get("DiagnosticCode") or ""),
            **when,
        )
    if delivery == "COMPLAINED":
        return DeliveryOutcome(
            "complained", "error", "complained: the recipient marked it as spam", **when
        )
    if delivery == "DELAYED":
        return DeliveryOutcome("delayed", "pending", "delayed: SES is still trying", **when)
    if delivery == "REJECTED":
        return DeliveryOutcome("rejected", "error", "rejected by SES: not sent (virus)", **when)
    if delivery:
        return DeliveryOutcome(delivery.lower(), "warning", f"delivery status {delivery}", **when)
    if status == Status.SENT:
        return DeliveryOutcome("no-report", "pending", "accepted by SES, no delivery report yet")
    return None


@dataclass(frozen=True)
class TimelineEvent:
    type: str
    at: str
    at_utc: str
    summary: str
    id: str


def timeline(row: dict[str, Any]) -> list[TimelineEvent]:
    """The row's DeliveryEvents, oldest first; entries that are not maps are skipped."""
    events = row.get("DeliveryEvents")
    if not isinstance(events, list):
        return []
    return [
        TimelineEvent(
            type=str(event.get("Type", "")),
            at=iso_local_text(event.get("At")),
            at_utc=_iso_utc_text(event.get("At")),
            summary=str(event.get("Summary", "")),
            id=str(event.get("Id", "")),
        )
        for event in events
        if isinstance(event, dict)
    ]
