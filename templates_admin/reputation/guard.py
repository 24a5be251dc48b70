"""The reputation guard's periodic evaluation (Celery beat, every 5 minutes).

For the account and each organization over the window:

- **warn** (or SES's enforcement status PROBATION): an ERROR log line, the console banner (the
  ``reputation`` OpsReading) and an alert to ``ALERT_WEBHOOK_URL`` when a warning is new;
- **act**: an automatic pause of ``bulk`` and a slowdown of ``normal`` mail, account-wide or for
  that organization; lifted again once the rates are back under the act line. A pause a person
  set is never lifted here, and one a person lifted is not set again for an hour
  (``services.RESUME_HOLD_SECONDS``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from emailops.alerts import post_alert
from emailops.core.events import EventLog
from emailops.core.reputation import Priority, State
from monitoring.models import OpsReading
from templates_admin.reputation import selectors
from templates_admin.reputation.services import now_text

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = ["READING", "reputation_evaluate"]

log = EventLog(logging.getLogger("templates_admin.reputation"))
READING = "reputation"


def _percent(rate: float) -> str:
    return f"{rate * 100:.2f} %"


def _describe(where: str, figures: dict[str, Any]) -> str:
    return (
        f"{where}: bounce rate {_percent(figures['bounce_rate'])}, complaint rate "
        f"{_percent(figures['complaint_rate'])} over {figures['delivered'] + figures['bounced']}"
        f"+ sends ({figures['state']})"
    )


def reputation_evaluate(*, adapters: Container) -> dict[str, Any]:
    """Judge the rates, set or lift the automatic pauses, warn. Returns what it stored."""
    summary = selectors.reputation_summary(adapters=adapters)
    ses = selectors.ses_account_view(adapters=adapters)
    state = adapters.reputation_state
    scopes: list[tuple[str | None, dict[str, Any]]] = [(None, summary["account"])]
    scopes += [(org, figures) for org, figures in summary["organizations"].items()]

    warnings: list[str] = []
    acting: set[str | None] = set()
    for org, figures in scopes:
        where = f"organization {org}" if org else "account"
        if figures["state"] in (State.WARN, State.ACT):
            warnings.append(_describe(where, figures))
        if figures["state"] == State.ACT:
            acting.add(org)
            reason = f"automatic: {_describe(where, figures)}"
            for priority, mode in ((Priority.BULK, "pause"), (Priority.NORMAL, "slow")):
                if state.set(
                    priority=priority.value,
                    organization=org,
                    reason=reason,
                    mode=mode,
                    source="auto",
                    by="guard",
                    since=now_text(),
                ):
                    log.error(
                        "reputation.act", priority=priority.value, organization=org, mode=mode
                    )
    for entry in state.entries():
        org = entry.get("organization")
        lifted = entry.get("source") == "auto" and org not in acting
        if lifted and state.lift_auto(priority=entry["priority"], organization=org):
            log.warning("reputation.recovered", priority=entry["priority"], organization=org)

    enforcement = ses.get("enforcement_status", "")
    if enforcement and enforcement not in ("HEALTHY",):
        warnings.append(f"SES enforcement status is {enforcement}")
    for warning in warnings:
        log.error("reputation.warn", warning=warning)

    previous = OpsReading.objects.filter(name=READING).first()
    before = set((previous.value or {}).get("warnings", [])) if previous else set()
    reading = {
        "warnings": warnings,
        "acting": sorted(org or "account" for org in acting),
        "states": {(org or "account"): figures["state"] for org, figures in scopes},
        "ses_enforcement_status": enforcement,
        "at": now_text(),
    }
    OpsReading.objects.update_or_create(
        name=READING, defaults={"value": reading, "at": timezone.now()}
    )
    state.store_evaluation({(org or "account"): figures for org, figures in scopes})
    new = [w for w in warnings if w not in before]
    webhook = adapters.config.reputation.alert_webhook_url
    if new and webhook:
        text = "emailops reputation warning:\n" + "\n".join(f"• {w}" for w in new)
        if acting:
            text += "\nThe guard is holding back bulk mail and slowing normal mail."
        try:
            post_alert(webhook, text)
        except OSError as exc:
            log.error("reputation.alert_failed", error=f"{type(exc).__name__}: {exc}")
    return reading
