"""The Celery app. Tasks live in ``worker.tasks``; settings are the ``CELERY_*`` Django settings."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "emailops.settings")

app = Celery("emailops")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["worker"])
