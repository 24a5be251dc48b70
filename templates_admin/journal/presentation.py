"""Journal rows in plain words, shared by the console pages and ``email_log``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from emailops.aws.journal_search import failure_is_permanent
from emailops.core.ports import Status

# Shared with the other areas (display); re-exported here for the journal's own callers.
from templates_admin.display import (  # noqa: F401
    MASK,
    local_text,
    mask_context,
    moment,
    sensitive_keys,
    utc_text,
)
from templates_admin.journal.delivery import DeliveryOutcome, delivery_outcome

EXCERPT_LENGTH = 140

# The journal's attributes in reading order (the Go consumer's, then ours); others follow, sorted.
ATTRIBUTE_ORDER = (
    "Id",
    "MessageId",
    "Recipient",
    "Status",
    "Timestamp",
    "SentAtKey",
    "MessageSent",
    "SesMessageId",
    "Error",
    "DeliveryStatus",
    "DeliveryStatusAt",
    "BounceType",
    "BounceSubType",
    "DiagnosticCode",
    "Subject",
    "TemplateKey",
    "TemplateVersion",
    "RecipientKey",
    "ClaimExpiresAt",
    "Attempts",
    "ExpiresAt",
    "Context",
    "DeliveryEvents",
)
EPOCH_ATTRIBUTES = ("Timestamp", "ClaimExpiresAt", "ExpiresAt")

_CUSTOM_TEMPLATE = re.compile(r"^custom/O(?P<org>[^/]+)/")


def ordered(row: dict[str, Any]) -> dict[str, Any]:
    known = {name: row[name] for name in ATTRIBUTE_ORDER if name in row}
    return known | {name: row[name] for name in sorted(row) if name not in known}


def masked_row(row: dict[str, Any]) -> dict[str, Any]:
    if "Context" not in row:
        return ordered(row)
    return ordered(row | {"Context": mask_context(row["Context"])})


def branding(template_key: str | None) -> str:
    """Which template family was used: "default", "org 367", or "" when the row does not say."""
    if not template_key:
        return ""
    match = _CUSTOM_TEMPLATE.match(template_key)
    if match:
        return f"org {match['org']}"
    return "default" if template_key.startswith("default/") else template_key


def excerpt(text: str | None, length: int = EXCERPT_LENGTH) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= length else text[: length - 1] + "…"


def _rfc3339_local(text: Any) -> str:
    """MessageSent ("2026-01-02T03:04:05Z") in the console's time zone; as stored if unreadable."""
    if not isinstance(text, str) or not text:
        return ""
    try:
        return local_text(datetime.fromisoformat(text).timestamp())
    except ValueError:
        return text


@dataclass(frozen=True)
class RowSummary:
    """One line of a result list."""

    key: str
    recipient: str
    message_id: str
    status: str
    subject: str
    branding: str
    error: str
    timestamp: int | None
    local_time: str
    utc_time: str
    stuck: bool  # QUEUED and its claim's lease has ended
    delivery: DeliveryOutcome | None = None  # what SES reported after accepting it

    @property
    def status_label(self) -> str:
        return f"{self.status} (stuck)" if self.stuck else self.status


def summarize(row: dict[str, Any], *, now: int) -> RowSummary:
    timestamp = row.get("Timestamp")
    lease = row.get("ClaimExpiresAt")
    return RowSummary(
        key=str(row.get("Id", "")),
        recipient=str(row.get("Recipient", "")),
        message_id=str(row.get("MessageId", "")),
        status=str(row.get("Status", "")),
        subject=str(row.get("Subject", "")),
        branding=branding(row.get("TemplateKey")),
        error=excerpt(row.get("Error")),
        timestamp=timestamp if isinstance(timestamp, int) else None,
        local_time=local_text(timestamp),
        utc_time=utc_text(timestamp),
        stuck=row.get("Status") == Status.QUEUED and isinstance(lease, int) and lease < now,
        delivery=delivery_outcome(row),
    )


@dataclass(frozen=True)
class StatusExplanation:
    tone: str  # "ok", "pending", "warning" or "error": the badge's colour
    headline: str
    details: list[str] = field(default_factory=list)


def explain_status(
    row: dict[str, Any], *, now: int, lease_ends_at: int | None
) -> StatusExplanation:
    """What the row's status means for the person asking "did they get the email?"."""
    status = row.get("Status")
    claimed = local_text(row.get("Timestamp"))
    if status == Status.SENT or row.get("DeliveryStatus"):
        accepted = _rfc3339_local(row.get("MessageSent")) or claimed
        return _explain_delivery(row, accepted)
    if status == Status.SUPPRESSED:
        return StatusExplanation(
            "warning",
            f"Not sent: {row.get('Recipient', 'the address')} is on the suppression list.",
            [
                f"Why: {row.get('Error') or 'no reason recorded'} (checked at {claimed}).",
                "An address is suppressed after a hard bounce or a complaint, so that SES keeps "
                "trusting our sending. If the person has fixed their mailbox or asked to receive "
                "email again, a Support lead can remove the address from the suppression list, "
                "then resend.",
            ],
        )
    if status == Status.QUEUED:
        return _explain_queued(claimed, now=now, lease_ends_at=lease_ends_at)
    if status == Status.FAILED:
        return _explain_failed(str(row.get("Error") or "no error recorded"))
    return StatusExplanation("warning", f"Unknown status {status!r}.")


def _explain_delivery(row: dict[str, Any], accepted: str) -> StatusExplanation:
    """A SENT row: what SES reported after accepting it (delivery events)."""
    outcome = delivery_outcome(row) or DeliveryOutcome("no-report", "pending", "")
    ses_id = f"SES message id: {row.get('SesMessageId') or 'not recorded'}."
    at = f" at {outcome.at}" if outcome.at else ""
    if outcome.state == "no-report":
        return StatusExplanation(
            "pending",
            f"Accepted by SES at {accepted}; no delivery report yet.",
            [
                ses_id,
                "SES reports delivery, bounces and complaints usually within minutes of accepting "
                "an email; this page shows them when they arrive. Emails sent before delivery "
                "events were switched on never get a report.",
            ],
        )
    if outcome.state == "delivered":
        return StatusExplanation(
            "ok",
            f"Delivered{at}: the recipient's mail server accepted it.",
            [
                f"Accepted by SES at {accepted}. {ses_id}",
                "Delivered to their server is all SES can tell; if the person cannot find it, "
                "check their spam or junk folder and any mail filters.",
            ],
        )
    reported = f"Reported by SES at {outcome.at}; accepted" if outcome.at else "Accepted"
    details = [f"{reported} by SES at {accepted}. {ses_id}"]
    if outcome.state == "bounced":
        details.append(f"Bounce type: {outcome.bounce or 'not recorded'}.")
        if outcome.diagnostic:
            details.append(f"Their mail server said: {outcome.diagnostic}")
        if row.get("BounceType") == "Permanent":
            details.append(
                "A permanent bounce puts the address on the suppression list: later emails to it "
                "are not sent until it is removed."
            )
        else:
            details.append("A temporary bounce: a later email may well arrive.")
    elif outcome.state == "complained":
        details.append(
            "The recipient's mail provider reported it as spam. The address is on the "
            "suppression list: later emails to it are not sent unless the person asks for them."
        )
    elif outcome.state == "delayed":
        details.append(
            "The recipient's server has not accepted it yet; SES keeps retrying for some hours "
            "and reports delivery or a bounce when it knows."
        )
    return StatusExplanation(
        outcome.tone, outcome.text[:1].upper() + outcome.text[1:] + ".", details
    )


def _explain_queued(claimed: str, *, now: int, lease_ends_at: int | None) -> StatusExplanation:
    if lease_ends_at is None:
        return StatusExplanation(
            "pending",
            f"Claimed at {claimed}; not sent yet.",
            ["The claim's length is unknown, so whether it is still in progress is too."],
        )
    lease_end = local_text(lease_ends_at)
    if lease_ends_at >= now:
        return StatusExplanation(
            "pending",
            f"In progress: a consumer claimed it at {claimed} and is sending it.",
            [f"Its claim lasts until {lease_end}."],
        )
    return StatusExplanation(
        "warning",
        f"Stuck since {lease_end}: claimed at {claimed}, but the consumer did not finish.",
        [
            "It will be retried when SQS delivers the request again (automatically while it is "
            "on the queue; if it went to the dead-letter queue, redrive it).",
            "If the consumer's log shows event=mark_sent.failed for this key, the email did go "
            "out and only this row missed it.",
        ],
    )


def _explain_failed(error: str) -> StatusExplanation:
    permanent = failure_is_permanent(error)
    if permanent:
        return StatusExplanation(
            "error",
            f"Failed permanently: {error}",
            [
                "Retrying as things stand cannot help; fix the cause first.",
                "The request was moved to the dead-letter queue; redrive it to retry (a FAILED "
                "row is claimed again on redelivery), or resend this email from here.",
            ],
        )
    if permanent is False:
        return StatusExplanation(
            "warning",
            f"Failed for now, will be retried: {error}",
            [
                "A temporary problem (throttling, a timeout, an outage). SQS delivers the request "
                "again after a back-off and the consumer claims this row again; after the queue's "
                "maximum number of receives it moves to the dead-letter queue.",
            ],
        )
    return StatusExplanation(
        "error",
        f"Failed: {error}",
        [
            "The row does not say whether the failure is permanent (the Go consumer wrote it).",
            "A FAILED row is claimed again whenever the request is delivered again.",
        ],
    )
