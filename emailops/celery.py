"""The Celery app. Tasks live in ``worker.tasks``; settings are the ``CELERY_*`` Django settings.

Run a worker with ``celery -A emailops worker`` and the periodic checks with ``celery -A emailops
beat`` (``manage.py devstack`` starts both).
"""

from __future__ import annotations

import os

from celery import Celery
from celery.schedules import crontab

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "emailops.settings")

app = Celery("emailops")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["worker"])


@app.on_after_configure.connect
def _beat_schedule(sender: Celery, **kwargs) -> None:
    from django.conf import settings

    sender.conf.beat_schedule = {
        "dead-letter-depth": {
            "task": "worker.check_dead_letter_depth",
            "schedule": float(settings.OPS_DLQ_CHECK_SECONDS),
        },
        "stuck-claims": {
            "task": "worker.find_stuck_claims",
            "schedule": float(settings.OPS_STUCK_CLAIMS_SECONDS),
        },
        "daily-template-check": {
            "task": "worker.check_templates_daily",
            "schedule": crontab(hour=settings.OPS_TEMPLATE_CHECK_HOUR, minute=0),
        },
        "reputation": {
            "task": "worker.evaluate_reputation",
            "schedule": float(settings.REPUTATION_CHECK_SECONDS),
        },
        # AUDIT_RETENTION_DAYS: the audit trails keep this long, no longer.
        "audit-retention": {
            "task": "worker.prune_audit_trails",
            "schedule": crontab(hour=3, minute=30),
        },
    }
