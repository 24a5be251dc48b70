"""The operations dashboard's reads: every figure comes from pre-aggregated data, never the journal.

- the account's hourly counters (one Query through ``reputation.selectors.hourly_counts``) feed
  the sends, rates and throttles charts;
- the dead-letter depth per hour is the beat check's ``OpsReading`` history (one SQL query);
- quota headroom and SES's own view come from ``ses_account_view`` (sesv2 GetAccount);
- the tables, the banner and the pauses come from ``reputation_summary`` and ``pauses``.

A source that fails leaves its charts empty and says why; the front page itself still renders.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlencode

from django.urls import reverse

from emailops.core.errors import EmailOpsError
from emailops.core.events import EventLog
from emailops.unsubscribes import UNSUBSCRIBED, category_of_counter
from monitoring.checks import DLQ_DEPTH, HOUR_SEPARATOR
from monitoring.models import OpsReading
from templates_admin.categories import category_labels
from templates_admin.dashboard import words
from templates_admin.jobs.selectors import ops_readings
from templates_admin.reputation import selectors as reputation

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = [
    "GMAIL_COMPLAINT",
    "SES_PAUSE",
    "SES_REVIEW",
    "dashboard",
    "dlq_depth_history",
    "hour_labels",
    "unsubscribes",
]

log = EventLog(logging.getLogger("templates_admin.dashboard"))
T = TypeVar("T")

# SES's own lines, as fractions: an account is put under review at these rates, and may be
# paused at the second pair. They are SES's, not ours, so they are not settings.
SES_REVIEW = {"bounce": 0.05, "complaint": 0.001}
SES_PAUSE = {"bounce": 0.10, "complaint": 0.005}
# Gmail's (and Yahoo's) 2024 bulk-sender rule: keep the complaint rate under 0.3 % (their Postmaster
# Tools' figure; docs/preferences.md). Also theirs, not a setting.
GMAIL_COMPLAINT = 0.003
# Rows in each "worst messageIds / organizations" table (was OPS_DASHBOARD_TOP).
TOP_ROWS = 10

# Outcomes stacked in the sends chart (a complaint is a delivered email that came back later, so
# it is in the rates chart, not stacked twice).
SEND_OUTCOMES = (
    "delivered",
    "bounced_permanent",
    "bounced_transient",
    "rejected",
    "failed",
    "suppressed",
)
_STATE_ORDER = {"act": 3, "warn": 2, "ok": 1, "low_volume": 0}
_HOUR = "%Y-%m-%dT%H"


def hour_labels(*, now: datetime, hours: int) -> list[str]:
    """The ``hours`` UTC hours ending with the one ``now`` falls in, oldest first."""
    last = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return [(last - timedelta(hours=back)).strftime(_HOUR) for back in range(hours - 1, -1, -1)]


def dlq_depth_history(*, since_hour: str) -> dict[str, int]:
    """Hour → the deepest the dead-letter queue was read that hour (one indexed range query)."""
    prefix = f"{DLQ_DEPTH}{HOUR_SEPARATOR}"
    rows = OpsReading.objects.filter(
        name__gte=prefix + since_hour, name__lt=prefix + "~"
    ).values_list("name", "value")
    return {name[len(prefix) :]: int((value or {}).get("depth", 0)) for name, value in rows}


# Every percentage the dashboard shows, chart and table alike, has this many decimals.
PERCENT_DECIMALS = 1


def _percent(numerator: int, denominator: int) -> float | None:
    return round(100.0 * numerator / denominator, PERCENT_DECIMALS) if denominator else None


def percent(fraction: float | int | None) -> float:
    """A rate (a fraction, as the counters' summary holds it) as the dashboard's percentage."""
    return round(100.0 * float(fraction or 0), PERCENT_DECIMALS)


def _rolling_rates(
    hours: list[str], counts: dict[str, dict[str, int]], window: int
) -> dict[str, list[float | None]]:
    """Rates over the ``window`` hours ending at each hour, as SES judges them (not per hour: one
    bounce in a quiet hour is not a 100 % bounce rate). None where nothing was sent."""
    names = ("delivered", "bounced_permanent", "bounced_transient", "rejected", "complained")
    first = datetime.strptime(hours[0], _HOUR).replace(tzinfo=UTC)
    span = [
        (first - timedelta(hours=back)).strftime(_HOUR) for back in range(window - 1, 0, -1)
    ] + hours
    totals = dict.fromkeys(names, 0)
    delivery, bounce, complaint = [], [], []
    for index, hour in enumerate(span):
        for name in names:
            totals[name] += counts.get(hour, {}).get(name, 0)
            if index >= window:
                totals[name] -= counts.get(span[index - window], {}).get(name, 0)
        if index < window - 1:
            continue
        delivered, hard = totals["delivered"], totals["bounced_permanent"]
        bounced = hard + totals["bounced_transient"]
        delivery.append(_percent(delivered, delivered + bounced + totals["rejected"]))
        bounce.append(_percent(hard, delivered + bounced))
        complaint.append(_percent(totals["complained"], delivered))
    return {"delivery": delivery, "bounce": bounce, "complaint": complaint}


def unsubscribes(counts: dict[str, dict[str, int]], hours: list[str]) -> dict[str, Any]:
    """Unsubscribes over ``hours`` (the account's ``unsubscribed`` counters, which the public
    endpoint adds to through ``emailops.unsubscribes.record_unsubscribe``): the total and one
    row per category, most first, with the console's label."""
    per_category: dict[str, int] = {}
    total = 0
    for hour in hours:
        for name, value in counts.get(hour, {}).items():
            if name == UNSUBSCRIBED:
                total += value
            elif (category := category_of_counter(name)) is not None:
                per_category[category] = per_category.get(category, 0) + value
    labels = category_labels() if per_category else {}
    rows = [
        {"category": slug, "label": labels.get(slug) or slug, "count": count}
        for slug, count in sorted(per_category.items(), key=lambda item: (-item[1], item[0]))
    ]
    return {"total": total, "categories": rows}


def _read(what: str, problems: list[str], read: Callable[[], T], default: T) -> T:
    try:
        return read()
    except EmailOpsError as exc:  # SharedStateUnavailable (Redis) included
        error = exc.describe() if isinstance(exc, EmailOpsError) else f"{type(exc).__name__}: {exc}"
        log.warning("dashboard.source_unavailable", source=what, error=error)
        problems.append(f"{what}: {error}")
        return default


def _journal_url(admin_site_name: str, *, message_id: str = "", since: str = "") -> str:
    """The journal search with the filters filled in (the search itself needs a recipient)."""
    params = {"message_id": message_id, "delivery": "BOUNCED", "since": since}
    base = reverse(f"{admin_site_name}:templates_admin_emailjournalpage_changelist")
    return base + "?" + urlencode({k: v for k, v in params.items() if v})


def _worst(
    entries: Any, *, key: str, limit: int, url: Callable[[str], str]
) -> list[dict[str, Any]]:
    """The entries of one scope, worst first: past the guard's lines before under them, then by
    the larger of the two rates measured against SES's review line."""
    if isinstance(entries, dict):
        entries = [{key: name, **figures} for name, figures in entries.items()]
    rows = []
    for entry in entries or []:
        name = str(entry.get(key, ""))
        bounce, complaint = (
            float(entry.get("bounce_rate", 0)),
            float(entry.get("complaint_rate", 0)),
        )
        severity = max(bounce / SES_REVIEW["bounce"], complaint / SES_REVIEW["complaint"])
        rows.append(
            {
                "name": name,
                "sent": entry.get("sent", 0),
                "delivered": entry.get("delivered", 0),
                "bounced": entry.get("bounced", 0),
                "complained": entry.get("complained", 0),
                "bounce_percent": percent(bounce),
                "complaint_percent": percent(complaint),
                "state": entry.get("state", "ok"),
                "journal_url": url(name),
                "_order": (_STATE_ORDER.get(entry.get("state", "ok"), 1), severity),
            }
        )
    rows.sort(key=lambda row: row.pop("_order"), reverse=True)
    return rows[:limit]


def _alerts(summary: dict[str, Any], ses: dict[str, Any]) -> list[dict[str, str]]:
    """The banner's lines: the account, then each organization or messageId past a line."""
    alerts = []
    account = summary.get("account") or {}
    if account.get("state") in ("warn", "act"):
        alerts.append(
            {
                "level": account["state"],
                "scope": "account",
                "organization": None,
                **_rate_text(account),
            }
        )
    for scope, key, entries in (
        ("organization", "organization", summary.get("organizations")),
        ("messageId", "message_id", summary.get("message_ids")),
    ):
        if isinstance(entries, dict):
            entries = [{key: name, **figures} for name, figures in entries.items()]
        for entry in entries or []:
            if entry.get("state") in ("warn", "act"):
                name = f"{scope} {entry.get(key, '')}"
                alerts.append({"level": entry["state"], "scope": name, **_rate_text(entry)})
                if scope == "organization":
                    alerts[-1]["organization"] = str(entry.get(key, ""))
    if str(ses.get("enforcement_status", "")).upper() == "PROBATION":
        alerts.append(
            {"level": "warn", "scope": "account", "text": "SES has put the account on probation"}
        )
    alerts.sort(key=lambda alert: alert["level"] != "act")
    return alerts


def _rate_text(figures: dict[str, Any]) -> dict[str, str]:
    bounce, complaint = percent(figures.get("bounce_rate")), percent(figures.get("complaint_rate"))
    return {"text": f"bounce rate {bounce:.1f} %, complaint rate {complaint:.1f} %"}


def _quota(ses: dict[str, Any]) -> dict[str, Any]:
    maximum = ses.get("max_24_hour_send")
    sent = ses.get("sent_last_24_hours")
    if maximum is None or sent is None:
        return {}
    maximum, sent = float(maximum), float(sent)
    return {
        "max_24_hour_send": maximum,
        "sent_last_24_hours": sent,
        "remaining": max(0.0, maximum - sent),
        "max_send_rate": ses.get("max_send_rate"),
    }


def dashboard(
    *,
    adapters: Container,
    admin_site_name: str = "admin",
    now: datetime | None = None,
    chart_hours: int | None = None,
) -> dict[str, Any]:
    """Everything the front page shows: ``charts`` (JSON for the chart script) over
    ``chart_hours`` (default OPS_DASHBOARD_DAYS), ``worst_*`` tables, ``alerts`` (the banner),
    ``pauses`` and ``slowdowns``, ``ses`` (SES's own view) and ``problems``."""
    now = now or datetime.now(UTC)
    days = adapters.config.ops.dashboard_days
    window = adapters.config.reputation.window_hours
    chart_hours = chart_hours or days * 24
    hours = hour_labels(now=now, hours=chart_hours)
    problems: list[str] = []

    # One Query: the chart's days plus the rolling window before its first hour.
    read_days = -(-chart_hours // 24) + -(-window // 24)
    counted = _read(
        "counters",
        problems,
        lambda: reputation.hourly_counts(stats=adapters.stats, scope="account", days=read_days),
        [],
    )
    counts = {item.hour: {k: int(v) for k, v in item.counts.items()} for item in counted}

    def series(name: str) -> list[int]:
        return [counts.get(hour, {}).get(name, 0) for hour in hours]

    depth = dlq_depth_history(since_hour=hours[0])
    # The banner's reading (the last one) is the current hour's bar when that hour has none yet,
    # and never less: chart and banner show the same depth.
    latest = ops_readings()["dlq"]
    dlq_now = int((latest.value or {}).get("depth", 0)) if latest else None
    if dlq_now is not None and latest is not None:
        hour = latest.at.astimezone(UTC).strftime(_HOUR)
        if hour in hours:
            depth[hour] = max(depth.get(hour, 0), dlq_now)
    ses = _read("SES account", problems, lambda: reputation.ses_account_view(adapters=adapters), {})
    if ses.get("error"):
        problems.append(f"SES account: {ses['error']}")
    summary = _read(
        "reputation",
        problems,
        lambda: reputation.reputation_summary(adapters=adapters),
        {"account": {}},
    )
    paused = _read(
        "pauses",
        problems,
        lambda: reputation.pauses(reputation_state=adapters.reputation_state),
        [],
    )
    slowed = _read(
        "slowdowns",
        problems,
        lambda: reputation.slowdowns(reputation_state=adapters.reputation_state),
        [],
    )

    since = (now - timedelta(hours=window)).date().isoformat()
    top = TOP_ROWS
    charts = {
        "hours": hours,
        "sends": {
            "sent": series("sent"),
            "outcomes": {name: series(name) for name in SEND_OUTCOMES},
        },
        "rates": _rolling_rates(hours, counts, window),
        "rate_window_hours": window,
        "range_hours": chart_hours,
        "lines": {
            "review": SES_REVIEW,
            "pause": SES_PAUSE,
            "gmail": {"complaint": GMAIL_COMPLAINT},
        },
        "dlq": [depth.get(hour) for hour in hours],
        "dlq_now": dlq_now,
        "throttles": {"throttles": series("throttles"), "rate_waits": series("rate_waits")},
        "quota": _quota(ses),
    }
    account = summary.get("account") or {}
    rates = charts["rates"]
    alerts = _alerts(summary, ses)
    for alert in alerts:
        if alert["level"] == "act":
            alert["did"] = (
                words.act_consequence(alert["organization"], paused)
                if "organization" in alert
                else "the guard pauses the account or an organization, not one messageId"
            )
    organizations = summary.get("organizations")
    unsubscribed = unsubscribes(counts, hours[-window:])
    return {
        "unsubscribes": unsubscribed,
        "charts": charts,
        "account": account,
        # The account's figures over the window: the same numbers as each chart's last point.
        "figures": {
            "sent": account.get("sent", 0),
            "delivered": account.get("delivered", 0),
            "bounced": account.get("bounced", 0),
            "complained": account.get("complained", 0),
            "unsubscribed": unsubscribed["total"],
            "bounce_percent": rates["bounce"][-1],
            "complaint_percent": rates["complaint"][-1],
            "delivery_percent": rates["delivery"][-1],
            "dlq_now": dlq_now,
        },
        "state_text": words.state_words(account.get("state", ""), adapters.config.reputation),
        "quota": words.quota_words(charts["quota"], adapters.config.sending.max_send_rate),
        "alerts": alerts,
        "worst_message_ids": _worst(
            summary.get("message_ids"),
            key="message_id",
            limit=top,
            url=lambda name: _journal_url(admin_site_name, message_id=name, since=since),
        ),
        "worst_organizations": _worst(
            organizations,
            key="organization",
            limit=top,
            url=lambda name: _journal_url(admin_site_name, since=since),
        ),
        "range_days": days,
        "worst_organizations_empty": (
            f"None of the {account.get('sent', 0)} sends of the last {window} h named an "
            "organization."
            if account.get("sent")
            else "Nothing sent in the window."
        ),
        "pauses": paused,
        "slowdowns": slowed,
        "ses": ses,
        "problems": problems,
    }
