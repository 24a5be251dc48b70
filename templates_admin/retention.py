"""Retention of the console's audit trails: rows older than AUDIT_RETENTION_DAYS are deleted
(daily, by Celery beat: ``worker.prune_audit_trails``).

The trails: journal reads (JournalReadAudit), mapping changes (MappingChange), resends
(EmailAction), suppression removals (SuppressionRemoval) and finished jobs (Job, with their
steps; a job still pending or running is never pruned). Monitoring readings (OpsReading) are not
an audit trail and are left to their own housekeeping.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.utils import timezone

from emailops import container
from emailops.core.events import EventLog
from templates_admin.models import (
    EmailAction,
    Job,
    JournalReadAudit,
    MappingChange,
    SuppressionRemoval,
)

__all__ = ["audit_prune"]

logger = logging.getLogger("templates_admin.retention")


def audit_prune(*, days: int | None = None, now: datetime | None = None) -> dict[str, int]:
    """Delete audit rows older than ``days`` (AUDIT_RETENTION_DAYS); returns how many, per
    trail. ``days`` 0 or less keeps everything."""
    days = container.current().config.ops.audit_retention_days if days is None else days
    if days <= 0:
        return {}
    cutoff = (now or timezone.now()) - timedelta(days=days)
    finished = (Job.State.SUCCEEDED, Job.State.FAILED)
    querysets = {
        "journal_reads": JournalReadAudit.objects.filter(at__lt=cutoff),
        "mapping_changes": MappingChange.objects.filter(at__lt=cutoff),
        "email_actions": EmailAction.objects.filter(at__lt=cutoff),
        "suppression_removals": SuppressionRemoval.objects.filter(at__lt=cutoff),
        "jobs": Job.objects.filter(created_at__lt=cutoff, state__in=finished),
    }
    pruned = {}
    for name, qs in querysets.items():
        _, per_model = qs.delete()  # a job's steps go with it; counted are the trail's own rows
        pruned[name] = per_model.get(qs.model._meta.label, 0)
    EventLog(logger).info("audit.pruned", days=days, cutoff=cutoff.isoformat(), **pruned)
    return pruned
