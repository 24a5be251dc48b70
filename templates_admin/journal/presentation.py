"""Journal rows in plain words, shared by the console pages and ``email_log``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from emailops.core.journal_row import JournalRow
from emailops.core.journal_words import (
    ClaimWords,
    claim_words,
    delivery_words,
    failure_words,
    logged_only_explanation,
    row_state,
)
from emailops.core.lease import LeasePolicy
from emailops.core.ports import Status

# Shared with the other areas (display); re-exported here for the journal's own callers.
from templates_admin.display import (  # noqa: F401
    MASK,
    local_text,
    mask_context,
    moment,
    utc_text,
)
from templates_admin.journal.delivery import DeliveryOutcome, delivery_outcome

EXCERPT_LENGTH = 140

_CUSTOM_TEMPLATE = re.compile(r"^custom/O(?P<org>[^/]+)/")


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
    pill: StatusPill | None = None

    @property
    def status_label(self) -> str:
        return f"{self.status} (stuck)" if self.stuck else self.status


# row_state's words for a row still on its claim, and for one SES accepted without a report yet:
# the pill shows the row's status for them, and the delivery outcome for every other SENT state.
_CLAIM_STATES = ("in-progress", "claimed", "stuck")
_STATUS_STATES = (*_CLAIM_STATES, "no-report", "suppressed", "failed")


@dataclass(frozen=True)
class StatusPill:
    """The row at a glance: ``label`` (BOUNCED, SENT, QUEUED), its colour class ``state`` and,
    under a delivery outcome, the SES acceptance it followed (``secondary``)."""

    label: str
    state: str  # row_state's word: the pill's colour (journal-<state>)
    tone: str  # ok, pending, warning, error
    secondary: str = ""


def status_pill(row: JournalRow, *, now: int, lease: LeasePolicy) -> StatusPill:
    """The pill from the one state function (``journal_words.row_state``): a delivery outcome when
    there is one (DELIVERED, BOUNCED, COMPLAINED, DELAYED...), else the row's status. ``lease``:
    the container's one policy of when a claim ends (the consumer's too)."""
    state = row_state(row, now=now, lease=lease)
    words = delivery_words(row)
    if state in _STATUS_STATES or not state:
        label = row.status or state.upper() or "?"
        if state == "stuck":
            label += " · stuck"
        tone = {"stuck": "warning", "failed": "error", "suppressed": "warning"}.get(state, "")
        return StatusPill(label, state or "unknown", tone or ("ok" if words else "pending"))
    accepted = "accepted by SES" if row.status == Status.SENT else row.status
    if row.logged_only:
        accepted = "journaled only, never sent"
    return StatusPill(
        state.replace("-", " ").upper(),
        state,
        words.tone if words else "warning",
        secondary=accepted if accepted != state.upper() else "",
    )


# The summary's fields that are the row's own, as stored.
_AS_STORED = ("key", "recipient", "message_id", "status", "subject", "timestamp")


def summarize(row: JournalRow, *, now: int, lease: LeasePolicy) -> RowSummary:
    return RowSummary(
        **{name: getattr(row, name) for name in _AS_STORED},
        branding=branding(row.template_key),
        error=excerpt(row.error),
        local_time=local_text(row.timestamp),
        utc_time=utc_text(row.timestamp),
        stuck=lease.stuck(row, now=now),
        delivery=delivery_outcome(row),
        pill=status_pill(row, now=now, lease=lease),
    )


@dataclass(frozen=True)
class StatusExplanation:
    tone: str  # "ok", "pending", "warning" or "error": the badge's colour
    headline: str
    details: list[str] = field(default_factory=list)


def explain_status(row: JournalRow, *, now: int, lease: LeasePolicy) -> StatusExplanation:
    """What the row's status means for the person asking "did they get the email?"."""
    status = row.status
    claimed = local_text(row.timestamp)
    if row.logged_only:
        words = logged_only_explanation(row, claimed)
        return StatusExplanation(words.tone, words.headline, words.details)
    if status == Status.SENT or row.delivery.status:
        accepted = _rfc3339_local(row.message_sent) or claimed
        return _explain_delivery(row, accepted)
    if status == Status.SUPPRESSED:
        return StatusExplanation(
            "warning",
            f"Not sent: {row.recipient or 'the address'} is on the suppression list.",
            [
                f"Why: {row.error or 'no reason recorded'} (checked at {claimed}).",
                "An address is suppressed after a hard bounce or a complaint, so that SES keeps "
                "trusting our sending. If the person has fixed their mailbox or asked to receive "
                "email again, a Support lead can remove the address from the suppression list, "
                "then resend.",
            ],
        )
    claim = claim_words(row, now=now, lease=lease)
    if claim is not None:
        return _explain_queued(claimed, claim)
    if status == Status.FAILED:
        words = failure_words(row)
        return StatusExplanation(words.tone, words.headline, words.details)
    return StatusExplanation("warning", f"Unknown status {status!r}.")


def _explain_delivery(row: JournalRow, accepted: str) -> StatusExplanation:
    """A SENT row: what SES reported after accepting it (delivery events)."""
    outcome = delivery_outcome(row) or DeliveryOutcome("no-report", "pending", "")
    ses_id = f"SES message id: {row.ses_message_id or 'not recorded'}."
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
        if row.delivery.permanent_bounce:
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


def _explain_queued(claimed: str, claim: ClaimWords) -> StatusExplanation:
    if claim.lease_ends_at is None:
        return StatusExplanation(
            "pending",
            f"Claimed at {claimed}; not sent yet.",
            ["The claim's length is unknown, so whether it is still in progress is too."],
        )
    lease_end = local_text(claim.lease_ends_at)
    if claim.state == "in-progress":
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
