"""What templates_admin.admin mounts for the webhooks area. Not the package's ``__init__``: the
worker imports the delivery modules, and should not load the console's pages with them."""

from __future__ import annotations

from templates_admin.webhooks.urls import admin_urls
from templates_admin.webhooks.views import index as changelist

__all__ = ["admin_urls", "changelist"]
