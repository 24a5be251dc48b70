"""The dashboard's own page under /admin/templates_admin/operationspage/ (the front page itself
is the admin index)."""

from __future__ import annotations

from functools import partial

from django.urls import URLPattern, path

from templates_admin.dashboard import views


def admin_urls(admin_site) -> list[URLPattern]:
    def page(view):
        return admin_site.admin_view(partial(view, admin_site=admin_site))

    return [
        path("pause/", page(views.pause), name="templates_admin_dashboard_pause"),
        path("send-stop/", page(views.send_stop), name="templates_admin_dashboard_send_stop"),
    ]
