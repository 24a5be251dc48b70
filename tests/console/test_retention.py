"""AUDIT_RETENTION_DAYS: the daily beat task prunes every audit trail's rows older than that."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from emailops.celery import app
from jobs.models import Job, JobStep
from templates_admin.models import EmailAction, JournalReadAudit, MappingChange, SuppressionRemoval
from worker.tasks import prune_audit_trails

pytestmark = pytest.mark.django_db


def _aged(model, days: int, field: str = "at", **values):
    row = model.objects.create(**values)
    model.objects.filter(pk=row.pk).update(**{field: timezone.now() - timedelta(days=days)})
    return row


def test_rows_older_than_the_retention_are_pruned_from_every_trail(settings):
    settings.AUDIT_RETENTION_DAYS = 400
    for days in (401, 399):
        _aged(JournalReadAudit, days, channel="api", action="get", actor="t", query=f"q{days}")
        _aged(MappingChange, days, message_id=f"m{days}", action="update")
        _aged(
            EmailAction,
            days,
            kind="resend",
            message_id="m",
            recipient="r@example.com",
            dedupe_id=f"d{days}",
        )
        _aged(SuppressionRemoval, days, address="a@example.com", reason="r")
    old_job = _aged(Job, 401, "created_at", kind="bulk_resend", state=Job.State.SUCCEEDED)
    JobStep.objects.create(job=old_job, key="k", outcome="done")
    running = _aged(Job, 401, "created_at", kind="bulk_resend", state=Job.State.RUNNING)
    _aged(Job, 399, "created_at", kind="bulk_resend", state=Job.State.FAILED)

    pruned = prune_audit_trails()

    assert pruned == {
        "journal_reads": 1,
        "mapping_changes": 1,
        "email_actions": 1,
        "suppression_removals": 1,
        "jobs": 1,
    }
    assert list(JournalReadAudit.objects.values_list("query", flat=True)) == ["q399"]
    assert MappingChange.objects.get().message_id == "m399"
    assert EmailAction.objects.count() == SuppressionRemoval.objects.count() == 1
    assert set(Job.objects.values_list("pk", flat=True)) - {running.pk} == {
        Job.objects.get(state=Job.State.FAILED).pk
    }  # a running job is never pruned, however old
    assert not JobStep.objects.exists()


def test_the_prune_runs_daily_on_beat():
    from emailops.celery import _beat_schedule

    _beat_schedule(app)
    assert app.conf.beat_schedule["audit-retention"]["task"] == "worker.prune_audit_trails"
