"""The suppression list's pages under /admin/templates_admin/suppressionlistpage/ (the search is
the changelist itself). Specific suffixes first: an address may contain a slash."""

from __future__ import annotations

from functools import partial

from django.urls import URLPattern, path

from templates_admin.suppression import views


def admin_urls(admin_site) -> list[URLPattern]:
    def page(view):
        return admin_site.admin_view(partial(view, admin_site=admin_site))

    return [
        path(
            "entry/<path:address>/remove/",
            page(views.remove),
            name="templates_admin_suppression_remove",
        ),
        path(
            "entry/<path:address>/resubscribe/",
            page(views.resubscribe),
            name="templates_admin_suppression_resubscribe",
        ),
        path(
            "entry/<path:address>/", page(views.detail), name="templates_admin_suppression_detail"
        ),
    ]
