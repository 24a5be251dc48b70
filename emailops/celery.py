"""The Celery app. Tasks live in ``worker.tasks``; settings are the ``CELERY_*`` Django settings.

Run a worker with ``celery -A emailops worker`` and the periodic checks with ``celery -A emailops
beat`` (``manage.py devstack`` starts both).
"""

from __future__ import annotations

import os

from celery import Celery
from celery.schedules import crontab

from emailops.config import Config

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "emailops.settings")

app = Celery("emailops")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["worker"])

# A malformed setting stops `celery -A emailops worker|beat` here, naming it: raised in the beat
# schedule's signal handler below it would only be logged, and beat would run without a schedule.
Config.from_settings()


# The guard judges the rates this often (was REPUTATION_CHECK_SECONDS).
REPUTATION_CHECK_SECONDS = 300.0
WEBHOOK_SWEEP_SECONDS = 30.0
# The webhook outbox's sweep: a lost wake-up delays an event this long (plus the sweep's grace).
WEBHOOK_OUTBOX_SWEEP_SECONDS = 10.0
# A webhook worker's proof of life (webhooks.liveness).
WEBHOOK_HEARTBEAT_SECONDS = 60.0


@app.on_after_configure.connect
def _beat_schedule(sender: Celery, **kwargs) -> None:
    config = Config.from_settings()  # not the container: the app is below it (it sends tasks)
    ops = config.ops
    schedule = {
        "dead-letter-depth": {
            "task": "worker.check_dead_letter_depth",
            "schedule": float(ops.dlq_check_seconds),
        },
        "stuck-claims": {
            "task": "worker.find_stuck_claims",
            "schedule": float(ops.stuck_claims_seconds),
        },
        "daily-template-check": {
            "task": "worker.check_templates_daily",
            "schedule": crontab(hour=ops.template_check_hour, minute=0),
        },
        "reputation": {
            "task": "worker.evaluate_reputation",
            "schedule": REPUTATION_CHECK_SECONDS,
        },
        # Webhook deliveries whose scheduled task was lost.
        "webhook-sweep": {"task": "worker.webhook_sweep", "schedule": WEBHOOK_SWEEP_SECONDS},
        # AUDIT_RETENTION_DAYS: the audit trails keep this long, no longer.
        "audit-retention": {
            "task": "worker.prune_audit_trails",
            "schedule": crontab(hour=3, minute=30),
        },
    }
    if config.webhooks.emitted:
        # The durable outbox's events no wake-up took (a broker outage, a killed worker): on
        # the webhook queue, where the fan-out runs. Expires: a backlog runs one, not many.
        schedule["webhook-outbox-sweep"] = {
            "task": "worker.webhook_outbox_sweep",
            "schedule": WEBHOOK_OUTBOX_SWEEP_SECONDS,
            "options": {"queue": config.webhooks.queue, "expires": WEBHOOK_OUTBOX_SWEEP_SECONDS},
        }
        # Only a worker reading the webhook queue runs it: `webhooks add` knows one is there.
        schedule["webhook-heartbeat"] = {
            "task": "worker.webhook_heartbeat",
            "schedule": WEBHOOK_HEARTBEAT_SECONDS,
            # With no worker there, a stale heartbeat is dropped when one comes, not run.
            "options": {"queue": config.webhooks.queue, "expires": WEBHOOK_HEARTBEAT_SECONDS},
        }
    sender.conf.beat_schedule = schedule
