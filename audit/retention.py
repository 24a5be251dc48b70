"""Retention of the audit trails: rows older than AUDIT_RETENTION_DAYS are deleted (daily, by
Celery beat: ``worker.prune_audit_trails``).

Each trail is registered by the app that owns it (``trail()``, from its AppConfig.ready): journal
reads here; mapping changes, resends and suppression removals by the console; finished jobs (with
their steps; a job still pending or running is never pruned) by the job engine. Monitoring
readings (OpsReading) are not an audit trail and are left to their own housekeeping.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.db import models
from django.utils import timezone

from emailops.core.events import EventLog

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = ["audit_prune", "trail"]

logger = logging.getLogger("audit.retention")


@dataclass(frozen=True)
class _Trail:
    model: type[models.Model]
    at: str  # the field that dates a row
    only: dict[str, Any] = field(default_factory=dict)  # rows that may go (a finished job)


_TRAILS: dict[str, _Trail] = {}


def trail(name: str, model: type[models.Model], at: str, **only: Any) -> None:
    """Register an audit trail: ``model``'s rows dated by ``at`` (and matching ``only``) are
    pruned once older than the retention. Registering a name again replaces it."""
    _TRAILS[name] = _Trail(model, at, only)


def audit_prune(
    *, adapters: Container, days: int | None = None, now: datetime | None = None
) -> dict[str, int]:
    """Delete audit rows older than ``days`` (AUDIT_RETENTION_DAYS); returns how many, per
    trail. ``days`` 0 or less keeps everything."""
    days = adapters.config.ops.audit_retention_days if days is None else days
    if days <= 0:
        return {}
    cutoff = (now or timezone.now()) - timedelta(days=days)
    pruned = {}
    for name, kept in _TRAILS.items():
        qs = kept.model.objects.filter(**{f"{kept.at}__lt": cutoff}, **kept.only)
        _, per_model = qs.delete()  # a job's steps go with it; counted are the trail's own rows
        pruned[name] = per_model.get(qs.model._meta.label, 0)
    EventLog(logger).info("audit.pruned", days=days, cutoff=cutoff.isoformat(), **pruned)
    return pruned
