"""What happened after SES accepted an email, from the journal row's delivery state and timeline
(written by ``consume_ses_events``), with times in the console's zone. The words themselves are
``emailops.core.journal_words``'s.

Shared by the console pages, the CSV export and ``email_log``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.utils import timezone

from emailops.core.journal_row import JournalRow
from emailops.core.journal_words import DELIVERY_STATUSES, bounce_reason, delivery_words

__all__ = [
    "DELIVERY_STATUSES",
    "DeliveryOutcome",
    "TimelineEvent",
    "bounce_reason",
    "delivery_outcome",
    "iso_local_text",
    "timeline",
]


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


def delivery_outcome(row: JournalRow) -> DeliveryOutcome | None:
    """The row's delivery outcome; None while there is none to tell (QUEUED, FAILED)."""
    words = delivery_words(row)
    if words is None:
        return None
    at = row.delivery.at if words.state != "suppressed" else ""
    return DeliveryOutcome(
        words.state,
        words.tone,
        words.text,
        at=iso_local_text(at) if at else "",
        at_utc=_iso_utc_text(at),
        bounce=words.bounce,
        diagnostic=words.diagnostic,
    )


@dataclass(frozen=True)
class TimelineEvent:
    type: str
    at: str
    at_utc: str
    summary: str
    id: str


def timeline(row: JournalRow) -> list[TimelineEvent]:
    """The row's delivery events, oldest first."""
    return [
        TimelineEvent(
            type=entry.type,
            at=iso_local_text(entry.at),
            at_utc=_iso_utc_text(entry.at),
            summary=entry.summary,
            id=entry.id,
        )
        for entry in row.timeline
    ]
