"""Sending reputation: hourly counters, bounce and complaint rates, and the guard's decisions.

Counters are kept per hour (UTC, ``YYYY-MM-DDTHH``) for three scopes: the account, each messageId
and each organization. Rates are computed from them over a rolling window, never from the journal.

- bounce rate = hard (permanent) bounces / (delivered + bounced), as SES computes it;
- complaint rate = complaints / delivered;
- below ``min_volume`` delivered-or-bounced sends a rate is not judged (``low_volume``): a handful of
  bounces out of ten sends says nothing about a list.

The guard (``decide``) turns a scope's state and the mapping's priority into what a send may do:
``critical`` always goes; past the act line ``bulk`` waits and ``normal`` is slowed.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum

__all__ = [
    "ACCOUNT",
    "COUNTERS",
    "GateDecision",
    "HourCounts",
    "Priority",
    "Rates",
    "State",
    "Thresholds",
    "event_counter",
    "hour_of",
    "hour_range",
    "message_scope",
    "org_scope",
    "parse_priority",
    "rates_over",
]

ACCOUNT = "account"
COUNTERS = (
    "sent",
    "failed",
    "suppressed",
    "delivered",
    "bounced_permanent",
    "bounced_transient",
    "complained",
    "rejected",
    "delayed",
    "throttles",
    "rate_waits",
)


def message_scope(message_id: str) -> str:
    return f"message#{message_id}"


def org_scope(organization: str) -> str:
    return f"org#{organization}"


def hour_of(epoch: float) -> str:
    """The UTC hour an instant falls in, as the counters' sort key."""
    return _hour_text(int(epoch // 3600))


@functools.lru_cache(maxsize=16)  # asked for each count: the same hour, over and over
def _hour_text(hour: int) -> str:
    return datetime.fromtimestamp(hour * 3600, UTC).strftime("%Y-%m-%dT%H")


def hour_range(now: float, hours: int) -> tuple[str, str]:
    """(first, last) hour of the ``hours`` hours ending with the current one, inclusive."""
    last = datetime.fromtimestamp(now, UTC)
    first = last - timedelta(hours=max(1, hours) - 1)
    return first.strftime("%Y-%m-%dT%H"), last.strftime("%Y-%m-%dT%H")


def event_counter(event_type: str, bounce_type: str = "") -> str | None:
    """The counter a delivery event of ``event_type`` (SES's eventType) adds to, if any."""
    if event_type == "Bounce":
        return "bounced_permanent" if bounce_type == "Permanent" else "bounced_transient"
    return {
        "Delivery": "delivered",
        "Complaint": "complained",
        "Reject": "rejected",
        "DeliveryDelay": "delayed",
    }.get(event_type)


@dataclass(frozen=True)
class HourCounts:
    scope: str
    hour: str
    counts: dict[str, int] = field(default_factory=dict)


class State(StrEnum):
    OK = "ok"
    WARN = "warn"
    ACT = "act"
    LOW_VOLUME = "low_volume"


@dataclass(frozen=True)
class Thresholds:
    """Rates as fractions (0.02 is 2 %)."""

    bounce: float
    complaint: float

    def crossed(self, bounce_rate: float, complaint_rate: float) -> bool:
        return bounce_rate >= self.bounce or complaint_rate >= self.complaint


@dataclass(frozen=True)
class Rates:
    sent: int
    delivered: int
    bounced: int  # hard bounces: the ones SES's bounce rate counts
    complained: int
    bounce_rate: float
    complaint_rate: float
    state: str  # a State value

    def as_dict(self) -> dict[str, int | float | str]:
        return {
            "sent": self.sent,
            "delivered": self.delivered,
            "bounced": self.bounced,
            "complained": self.complained,
            "bounce_rate": self.bounce_rate,
            "complaint_rate": self.complaint_rate,
            "state": self.state,
        }


def rates_over(
    hours: Iterable[HourCounts], *, min_volume: int, warn: Thresholds, act: Thresholds
) -> Rates:
    totals: dict[str, int] = {}
    for hour in hours:
        for name, value in hour.counts.items():
            totals[name] = totals.get(name, 0) + int(value)
    delivered = totals.get("delivered", 0)
    hard = totals.get("bounced_permanent", 0)
    volume = delivered + hard + totals.get("bounced_transient", 0)
    complained = totals.get("complained", 0)
    bounce_rate = hard / volume if volume else 0.0
    complaint_rate = complained / delivered if delivered else 0.0
    if volume < min_volume:
        state = State.LOW_VOLUME
    elif act.crossed(bounce_rate, complaint_rate):
        state = State.ACT
    elif warn.crossed(bounce_rate, complaint_rate):
        state = State.WARN
    else:
        state = State.OK
    return Rates(
        sent=totals.get("sent", 0),
        delivered=delivered,
        bounced=hard,
        complained=complained,
        bounce_rate=round(bounce_rate, 6),
        complaint_rate=round(complaint_rate, 6),
        state=state.value,
    )


class Priority(StrEnum):
    CRITICAL = "critical"  # password resets, verification: never held back
    NORMAL = "normal"
    BULK = "bulk"


def parse_priority(value: str | None) -> Priority:
    """A mapping's stored ``Priority``; anything unknown (or none) is normal."""
    try:
        return Priority((value or "").strip().lower())
    except ValueError:
        return Priority.NORMAL


class GateDecision(StrEnum):
    GO = "go"
    SLOW = "slow"  # take a slot of the reduced rate first
    PAUSE = "pause"  # do not send: the record waits
