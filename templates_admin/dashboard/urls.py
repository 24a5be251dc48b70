"""The dashboard's own page under /admin/templates_admin/operationspage/ (the front page itself
is the admin index)."""

from __future__ import annotations

from functools import partial

from django.urls import URLPattern, path

from templates_admin.dashboard import views


def admin_urls(admin_site) -> list[URLPattern]:
    page = admin_site.admin_view(partial(views.pause, admin_site=admin_site))
    return [path("pause/", page, name="templates_admin_dashboard_pause")]
