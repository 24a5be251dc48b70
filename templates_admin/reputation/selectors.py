"""Reads for the console's front page and ``manage.py reputation``: pre-aggregated hourly
counters only (one Query per scope), never the journal."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from emailops.core.reputation import (
    ACCOUNT,
    HourCounts,
    Rates,
    Thresholds,
    hour_range,
    rates_over,
)

if TYPE_CHECKING:
    from emailops.aws.stats import BufferedStats
    from emailops.container import Container
    from emailops.redis.reputation import ReputationState

__all__ = [
    "guard_thresholds",
    "hourly_counts",
    "pauses",
    "reputation_banner",
    "reputation_summary",
    "ses_account_view",
    "slowdowns",
]


def guard_thresholds(*, adapters: Container) -> tuple[Thresholds, Thresholds]:
    """(warn, act) as fractions, from the percentages configured."""
    config = adapters.config.reputation
    warn = Thresholds(
        bounce=config.warn_bounce_percent / 100, complaint=config.warn_complaint_percent / 100
    )
    act = Thresholds(
        bounce=config.act_bounce_percent / 100, complaint=config.act_complaint_percent / 100
    )
    return warn, act


def _rates(hours: list[HourCounts], *, adapters: Container) -> Rates:
    warn, act = guard_thresholds(adapters=adapters)
    return rates_over(hours, min_volume=adapters.config.reputation.min_volume, warn=warn, act=act)


def hourly_counts(
    *, stats: BufferedStats | None, scope: str = ACCOUNT, days: int = 7
) -> list[HourCounts]:
    """The scope's hours over the last ``days`` days, oldest first (one Query; none without
    ``stats``, the container's counters)."""
    if stats is None:
        return []
    since, until = hour_range(time.time(), days * 24)
    return stats.read(scope=scope, since_hour=since, until_hour=until)


def _entries(mode: str, reputation_state: ReputationState) -> list[dict[str, Any]]:
    return [
        {
            "priority": e.get("priority"),
            "organization": e.get("organization"),
            "reason": e.get("reason", ""),
            "since": e.get("since", ""),
        }
        for e in reputation_state.entries()
        if e.get("mode") == mode
    ]


def pauses(*, reputation_state: ReputationState) -> list[dict[str, Any]]:
    """Pauses in force: ``{priority, organization, reason, since}`` (organization None =
    account-wide)."""
    return _entries("pause", reputation_state)


def slowdowns(*, reputation_state: ReputationState) -> list[dict[str, Any]]:
    """Slowdowns in force (normal priority at REPUTATION_SLOW_SHARE), same shape as pauses."""
    return _entries("slow", reputation_state)


def reputation_summary(*, adapters: Container, window_hours: int | None = None) -> dict[str, Any]:
    """The account's, each messageId's and each organization's counts and rates over the window
    (default REPUTATION_WINDOW_HOURS), and the pauses in force: the JSON of
    ``manage.py reputation --json``. One Query per scope."""
    window = window_hours or adapters.config.reputation.window_hours
    stats = adapters.stats
    since, until = hour_range(time.time(), window)
    account: dict[str, Any] = _rates([], adapters=adapters).as_dict()
    message_ids: dict[str, Any] = {}
    organizations: dict[str, Any] = {}
    if stats is not None:
        read = stats.read(scope=ACCOUNT, since_hour=since, until_hour=until)
        account = _rates(read, adapters=adapters).as_dict()
        for scope in sorted(stats.scopes(since_hour=since, until_hour=until)):
            kind, _, name = scope.partition("#")
            read = stats.read(scope=scope, since_hour=since, until_hour=until)
            figures = _rates(read, adapters=adapters)
            if kind == "message":
                message_ids[name] = figures.as_dict()
            elif kind == "org":
                organizations[name] = figures.as_dict()
    warn, act = guard_thresholds(adapters=adapters)
    return {
        "window_hours": window,
        "since_hour": since,
        "until_hour": until,
        "min_volume": adapters.config.reputation.min_volume,
        "thresholds": {
            "warn": {"bounce_rate": warn.bounce, "complaint_rate": warn.complaint},
            "act": {"bounce_rate": act.bounce, "complaint_rate": act.complaint},
        },
        "account": account,
        "message_ids": message_ids,
        "organizations": organizations,
        "paused": pauses(reputation_state=adapters.reputation_state),
        "slowed": slowdowns(reputation_state=adapters.reputation_state),
    }


def ses_account_view(*, adapters: Container) -> dict[str, Any]:
    """SES's own view (sesv2 GetAccount, CloudWatch reputation metrics): enforcement status,
    quota, sent in the last 24 h, rates where available; ``{"error": ...}`` when unavailable."""
    try:  # the adapter is built inside: a page renders without SES, whatever fails
        return adapters.ses_account_view.view()
    except Exception as exc:  # a page must render without SES
        return {"error": f"{type(exc).__name__}: {exc}"}


def reputation_banner() -> dict[str, Any] | None:
    """The guard's last evaluation when it warned or acted (the console's banner), else None:
    ``{warnings: [...], acting: [...], at}``."""
    from monitoring.models import OpsReading

    reading = OpsReading.objects.filter(name="reputation").first()
    value = (reading.value or {}) if reading else {}
    if not value.get("warnings") and not value.get("acting"):
        return None
    return {"warnings": value["warnings"], "acting": value.get("acting", []), "at": value["at"]}
