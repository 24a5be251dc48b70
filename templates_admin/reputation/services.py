"""Writes of the reputation guard: pauses set and lifted by a person (audited), and the periodic
evaluation that sets and lifts the automatic ones (``templates_admin.reputation.guard``)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import transaction

from emailops.core.events import EventLog
from emailops.core.reputation import Priority
from templates_admin.models import ReputationPauseChange

if TYPE_CHECKING:
    from emailops.redis.reputation import ReputationState

__all__ = ["pause_lift", "pause_set"]

log = EventLog(logging.getLogger("templates_admin.reputation"))

# After a pause is lifted by hand the guard leaves it lifted this long (was
# REPUTATION_RESUME_HOLD_MINUTES).
RESUME_HOLD_SECONDS = 3600


def now_text() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _checked(priority: str, organization: str | None, reason: str) -> tuple[str, str | None]:
    try:
        level = Priority(priority)
    except ValueError:
        raise ValidationError(f"priority must be bulk or normal, not {priority!r}") from None
    if level is Priority.CRITICAL:
        # Password resets and verification must always flow: the guard exists to protect them.
        raise ValidationError("critical mail is never paused")
    organization = str(organization).strip() if organization not in (None, "") else None
    if organization is not None and not organization.isdigit():
        raise ValidationError(f"organization must be a number, not {organization!r}")
    if not reason.strip():
        raise ValidationError("a reason is required")
    return level.value, organization


def _who(user: Any, actor: str) -> str:
    return getattr(user, "username", "") or actor or "unknown"


def _audit(
    action: str, priority: str, organization: str | None, reason: str, user: Any, actor: str
) -> None:
    ReputationPauseChange.objects.create(
        action=action,
        priority=priority,
        organization=organization or "",
        reason=reason,
        user=user if getattr(user, "pk", None) else None,
        actor=actor,
    )


def pause_set(
    *,
    reputation_state: ReputationState,
    priority: str,
    organization: str | None,
    reason: str,
    user: Any,
    actor: str = "",
) -> None:
    """Pause ``priority`` mail (account-wide, or one organization's): its records wait on the
    queue until the pause is lifted. Audited."""
    priority, organization = _checked(priority, organization, reason)
    who = _who(user, actor)
    with transaction.atomic():
        _audit(ReputationPauseChange.Action.PAUSE, priority, organization, reason, user, actor)
        reputation_state.set(
            priority=priority,
            organization=organization,
            reason=reason,
            mode="pause",
            source="manual",
            by=who,
            since=now_text(),
        )
    log.warning(
        "reputation.pause_set", priority=priority, organization=organization, by=who, reason=reason
    )


def pause_lift(
    *,
    reputation_state: ReputationState,
    priority: str,
    organization: str | None,
    reason: str,
    user: Any,
    actor: str = "",
) -> dict[str, Any] | None:
    """Lift the pause (or slowdown) of ``priority`` mail; the automatic guard does not set it
    again for RESUME_HOLD_SECONDS. Audited. Returns the entry lifted, if any."""
    priority, organization = _checked(priority, organization, reason)
    who = _who(user, actor)
    with transaction.atomic():
        _audit(ReputationPauseChange.Action.RESUME, priority, organization, reason, user, actor)
        lifted = reputation_state.lift(
            priority=priority,
            organization=organization,
            hold_seconds=RESUME_HOLD_SECONDS,
        )
    log.warning(
        "reputation.pause_lifted",
        priority=priority,
        organization=organization,
        by=who,
        reason=reason,
        was=(lifted or {}).get("mode"),
    )
    return lifted


# The audit trail records the emergency stop as a pause of this "priority": all mail.
ALL_MAIL = "all"


def send_stop_set(
    *, reputation_state: ReputationState, reason: str, user: Any, actor: str = ""
) -> None:
    """Stop all sending: every consumer journals each request log-only (reason service-stop)
    within REPUTATION_REFRESH_SECONDS, critical mail included. Audited."""
    if not reason.strip():
        raise ValidationError("a reason is required")
    who = _who(user, actor)
    with transaction.atomic():
        _audit(ReputationPauseChange.Action.PAUSE, ALL_MAIL, None, reason, user, actor)
        reputation_state.set_stop(reason=reason, by=who, since=now_text())
    log.error("send_stop.set", by=who, reason=reason)


def send_stop_lift(
    *, reputation_state: ReputationState, reason: str, user: Any, actor: str = ""
) -> dict[str, Any] | None:
    """Lift the emergency stop; returns the stop lifted, if any. Audited."""
    if not reason.strip():
        raise ValidationError("a reason is required")
    who = _who(user, actor)
    with transaction.atomic():
        _audit(ReputationPauseChange.Action.RESUME, ALL_MAIL, None, reason, user, actor)
        lifted = reputation_state.lift_stop()
    log.warning("send_stop.lifted", by=who, reason=reason, was=bool(lifted))
    return lifted
