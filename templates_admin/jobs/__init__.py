"""Console operations run as jobs (the ``jobs`` app's engine runs them): dead-letter listing and
redrive, bulk resend, erasure, template check (also daily, as beat's periodic work), one module
per kind, registered in ``templates_admin.apps``; ``admin_urls``/``changelist`` are the pages,
mounted by templates_admin.admin like the other features."""

from __future__ import annotations

from templates_admin.jobs.urls import admin_urls
from templates_admin.jobs.views import index as changelist

__all__ = ["admin_urls", "changelist"]
