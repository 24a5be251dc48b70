"""Console pages: the suppression list (addresses the consumer will not send to), and removing an
address from it. See templates_admin.admin for how they are mounted."""

from __future__ import annotations

from templates_admin.suppression.urls import admin_urls
from templates_admin.suppression.views import search as changelist

__all__ = ["admin_urls", "changelist"]
