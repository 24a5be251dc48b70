"""Journal rows, failures and bounces in plain words: the one module that words them.

The console pages, the CSV export, ``email_log``, the API and the events path (a timeline entry's
stored summary, a suppression's detail) all word a bounce, a delivery outcome or a failure here, so
the same fact reads the same everywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from emailops.core.journal_row import DeliveryState, JournalRow
from emailops.core.lease import LeasePolicy
from emailops.core.log_only import logged_only_cause, logged_only_remedy
from emailops.core.ports import Status

__all__ = [
    "DELIVERY_STATUSES",
    "ClaimWords",
    "DeliveryWords",
    "FailureWords",
    "bounce_kind",
    "bounce_reason",
    "bounce_status_code",
    "bounce_summary",
    "claim_words",
    "complaint_detail",
    "delivery_words",
    "failure_words",
    "logged_only_cause",
    "logged_only_explanation",
    "logged_only_words",
    "row_state",
    "suppression_detail",
    "suppression_reason",
    "suppression_words",
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
_ENHANCED_CODE = re.compile(r"\b([245])\.(\d{1,3}\.\d{1,3})\b")
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


def bounce_status_code(diagnostic: str | None) -> str:
    """The enhanced status code in a receiving server's reply ("5.1.1"), or ""."""
    code = _ENHANCED_CODE.search(diagnostic or "")
    return f"{code.group(1)}.{code.group(2)}" if code else ""


def _diagnose(diagnostic: str, status_code: str) -> str | None:
    code = status_code or bounce_status_code(diagnostic)
    if code:
        detail = code.split(".", 1)[1]
        if detail in _CODE_WORDS:
            return _CODE_WORDS[detail]
        if detail.startswith("7."):
            return _POLICY
    return next((words for pattern, words in _WORDING if pattern.search(diagnostic)), None)


def bounce_kind(bounce_type: str | None) -> str:
    return {"Permanent": "hard bounce", "Transient": "soft bounce"}.get(bounce_type or "", "bounce")


def bounce_reason(
    bounce_type: str | None,
    sub_type: str | None,
    diagnostic: str | None,
    status_code: str = "",
) -> str:
    """Why it bounced, in a few words: "mailbox does not exist", "mailbox full (temporary)"..."""
    bounce_type, sub_type = (bounce_type or "").strip(), (sub_type or "").strip()
    words = _SUBTYPE_WORDS.get((bounce_type, sub_type))
    if words:
        return words
    if bounce_type == "Undetermined":
        return "SES could not tell why (undetermined bounce)"
    diagnosed = _diagnose(diagnostic or "", status_code)
    if bounce_type == "Transient":
        return f"{diagnosed} (temporary)" if diagnosed else "temporary delivery problem"
    if diagnosed:
        return diagnosed
    if bounce_type == "Permanent":
        return "the recipient's server refused it for good"
    return "reason not reported"


def suppression_detail(bounce_type: str, sub_type: str, diagnostic: str = "") -> str:
    """A hard bounce's suppression detail: the reason, and the server's reply when there is one.
    The suppression's own kind ("hard bounce") is added where the entry is worded, not here."""
    reason = bounce_reason(bounce_type, sub_type, diagnostic)
    return reason + (f" ({diagnostic})" if diagnostic else "")


# Why an address is on the suppression list (the table's Reason), in words: the shared table's
# spellings (the Go service's bounce/complaint, our manual/unsubscribe) and the old table's BOUNCE….
_SUPPRESSION_REASONS = {
    "bounce": "hard bounce",
    "complaint": "complaint",
    "manual": "added by hand",
    "unsubscribe": "unsubscribed",
}


def suppression_reason(reason: str) -> str:
    """A row without a Reason (the Go service's is optional) is still a suppression."""
    reason = reason.lower()
    return _SUPPRESSION_REASONS.get(reason, reason or "suppressed")


def suppression_words(reason: str, detail: str) -> str:
    """A suppression in one line: "hard bounce: mailbox does not exist (smtp; 550 5.1.1 …)"."""
    words = suppression_reason(reason)
    return f"{words}: {detail}" if detail else words


def complaint_detail(feedback_type: str) -> str:
    """A complaint's suppression detail; the kind ("complaint") is added where it is worded."""
    return f"marked as spam ({feedback_type or 'no feedback type given'})"


def bounce_summary(who: str, bounce_type: str, sub_type: str, diagnostic: str = "") -> str:
    """A bounce's timeline entry: the same reason the row's headline gives."""
    return f"Bounced, {who}: {suppression_detail(bounce_type, sub_type, diagnostic)}"


@dataclass(frozen=True)
class DeliveryWords:
    """One line for "did they get it?"."""

    state: str  # delivered, bounced, complained, delayed, rejected, suppressed, no-report
    tone: str  # ok, pending, warning or error (the console's colours)
    text: str  # "bounced: mailbox does not exist"
    bounce: str = ""  # "Permanent/General" for bounces
    diagnostic: str = ""


def _bounce_words(delivery: DeliveryState) -> DeliveryWords:
    reason = bounce_reason(
        delivery.bounce_type, delivery.bounce_subtype, delivery.diagnostic, delivery.status_code
    )
    return DeliveryWords(
        "bounced",
        "warning" if delivery.bounce_type == "Transient" else "error",
        f"bounced: {reason}",
        bounce="/".join(p for p in (delivery.bounce_type, delivery.bounce_subtype) if p),
        diagnostic=delivery.diagnostic,
    )


def delivery_words(row: JournalRow) -> DeliveryWords | None:
    """The row's delivery outcome; None while there is none to tell (QUEUED, FAILED)."""
    delivery = row.delivery
    if row.logged_only:  # SENT as the Go service writes it, yet never handed to SES
        return DeliveryWords("not-delivered", "warning", logged_only_words(row))
    if row.status == Status.SUPPRESSED:
        why = " ".join(row.error.split()) or "the address is suppressed"
        return DeliveryWords("suppressed", "warning", f"suppressed: never sent ({why})")
    if delivery.status == "DELIVERED":
        return DeliveryWords("delivered", "ok", "delivered")
    if delivery.status == "BOUNCED":
        return _bounce_words(delivery)
    if delivery.status == "COMPLAINED":
        return DeliveryWords("complained", "error", "complained: the recipient marked it as spam")
    if delivery.status == "DELAYED":
        return DeliveryWords("delayed", "pending", "delayed: SES is still trying")
    if delivery.status == "REJECTED":
        return DeliveryWords("rejected", "error", "rejected by SES: not sent (virus)")
    if delivery.status:
        return DeliveryWords(
            delivery.status.lower(), "warning", f"delivery status {delivery.status}"
        )
    if row.status == Status.SENT:
        return DeliveryWords("no-report", "pending", "accepted by SES, no delivery report yet")
    return None


@dataclass(frozen=True)
class FailureWords:
    tone: str
    headline: str
    details: list[str] = field(default_factory=list)


def failure_words(row: JournalRow) -> FailureWords:
    """A FAILED row's failure, from what the row records (``Permanent``), never from its text."""
    error = row.error or "no error recorded"
    if row.error_kind == "UnknownMessageId":
        return FailureWords(
            "error",
            f"Failed permanently: no template mapping has the messageId {row.message_id!r}.",
            [
                "Check the messageId the producer sent against the template mappings (a typo, "
                "or a template not added yet); a Template owner adds or fixes the mapping.",
                "The request was moved to the dead-letter queue; once the mapping exists, "
                "redrive it to retry. Until then a redrive or a resend fails the same way.",
            ],
        )
    if row.permanent:
        return FailureWords(
            "error",
            f"Failed permanently: {error}",
            [
                "Retrying as things stand cannot help; fix the cause first.",
                "The request was moved to the dead-letter queue; redrive it to retry (a FAILED "
                "row is claimed again on redelivery), or resend it (Support leads and Template "
                "owners may do either).",
            ],
        )
    if row.permanent is False:
        return FailureWords(
            "warning",
            f"Failed for now, will be retried: {error}",
            [
                "A temporary problem (throttling, a timeout, an outage). SQS delivers the request "
                "again after a back-off and the consumer claims this row again; after the queue's "
                "maximum number of receives it moves to the dead-letter queue.",
            ],
        )
    return FailureWords(
        "error",
        f"Failed: {error}",
        [
            "The row does not say whether the failure is permanent (the Go consumer, or an "
            "emailops release before ErrorKind/Permanent were recorded, wrote it).",
            "A FAILED row is claimed again whenever the request is delivered again.",
        ],
    )


@dataclass(frozen=True)
class ClaimWords:
    """A QUEUED row's claim: is a consumer still sending it? (The one lease rule, LeasePolicy.)"""

    state: str  # in-progress, stuck, or claimed (the row does not say when its claim ends)
    lease_ends_at: int | None  # when the claim ends, or ended (epoch seconds)


def claim_words(row: JournalRow, *, now: int, lease: LeasePolicy) -> ClaimWords | None:
    """The claim of a QUEUED row; None for any other row."""
    if not row.queued:
        return None
    lease_ends_at = lease.ends_at(row)
    if lease_ends_at is None:
        return ClaimWords("claimed", None)
    return ClaimWords("stuck" if lease.stuck(row, now=now) else "in-progress", lease_ends_at)


def logged_only_words(row: JournalRow) -> str:
    """A log-only row in words: "not delivered: <its cause>" (the cause: ``log_only``)."""
    return f"not delivered: {logged_only_cause(row) or 'logged only, reason unknown'}"


def logged_only_explanation(row: JournalRow, claimed: str) -> FailureWords:
    """The row page's words for a log-only row journaled at ``claimed``: its cause, what it
    means, what to do."""
    words = logged_only_words(row)
    details = [
        f"Journaled at {claimed} and never handed to SES (a log-only row, as the Go service "
        "writes it: SENT with LoggedOnly).",
        logged_only_remedy(row.logged_only_reason),
    ]
    return FailureWords("warning", f"{words[0].upper()}{words[1:]}.", details)


def row_state(row: JournalRow, *, now: int, lease: LeasePolicy) -> str:
    """The row in one word, in the order the detail page explains it: what SES reported once it
    accepted the email (delivered, bounced, ..., no-report), suppressed, the claim's state
    (in-progress, stuck, claimed), failed; a foreign status as written, in lower case."""
    if row.logged_only:  # SENT as Go writes it, but never handed to SES
        return "not-delivered"
    delivery = delivery_words(row)
    if delivery is not None and (row.status == Status.SENT or row.delivery.status):
        return delivery.state
    if row.status == Status.SUPPRESSED:
        return "suppressed"
    claim = claim_words(row, now=now, lease=lease)
    if claim is not None:
        return claim.state
    if row.status == Status.FAILED:
        return "failed"
    return row.status.lower() or "unknown"
