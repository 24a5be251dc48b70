"""Console operations run as Celery jobs: dead-letter redrive, bulk resend, template check, and
the beat checks (dead-letter depth, stuck claims, daily template check). See
``services`` for the job life cycle and one module per kind; ``admin_urls``/``changelist`` are
the pages, mounted by templates_admin.admin like the other features."""

from __future__ import annotations

from templates_admin.jobs.urls import admin_urls
from templates_admin.jobs.views import index as changelist

__all__ = ["admin_urls", "changelist"]
