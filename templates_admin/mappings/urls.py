"""The mapping pages' URLs, under /admin/templates_admin/templatemappingpage/. The draft pages
share that prefix; ``templates_admin.admin`` mounts them first (drafts use mappings, never the
reverse)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.contrib.admin import AdminSite
from django.urls import URLPattern, path, re_path

from templates_admin.mappings import views


def admin_urls(admin_site: AdminSite) -> list[URLPattern]:
    def page(route: str, view: Callable, name: str, *, regex: bool = False) -> URLPattern:
        bound = admin_site.admin_view(functools.partial(view, admin_site=admin_site))
        make = re_path if regex else path
        return make(route, bound, name=f"templates_admin_mapping_{name}")

    # <path:> so that a messageId with a "/" (rows written by hand) still gets working links; the
    # pages with a suffix come first, so the bare detail route cannot swallow them.
    return [
        page("add/", views.mapping_add, "add"),
        page("mapping/<path:message_id>/delete/", views.mapping_delete, "delete"),
        page(
            r"^mapping/(?P<message_id>.+)/source/O(?P<org>\d+)/$",
            views.template_source,
            "org_source",
            regex=True,
        ),
        page("mapping/<path:message_id>/source/", views.template_source, "source"),
        page("mapping/<path:message_id>/preview/", views.preview, "preview"),
        page("mapping/<path:message_id>/send-test/", views.send_test, "send_test"),
        page("mapping/<path:message_id>/", views.mapping_detail, "detail"),
    ]
