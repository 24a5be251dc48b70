"""The draft pages' URLs, mounted among the mapping pages (under
/admin/templates_admin/templatemappingpage/) by ``templates_admin.admin`` (before the mapping routes)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.contrib.admin import AdminSite
from django.urls import URLPattern, path

from templates_admin.drafts import views


def admin_urls(admin_site: AdminSite) -> list[URLPattern]:
    def page(route: str, view: Callable, name: str) -> URLPattern:
        bound = admin_site.admin_view(functools.partial(view, admin_site=admin_site))
        return path(route, bound, name=f"templates_admin_draft_{name}")

    # These come before the mapping routes: "mapping/<path:message_id>/" would swallow them.
    return [
        page("mapping/<path:message_id>/drafts/new/", views.draft_create, "create"),
        page("mapping/<path:message_id>/drafts/", views.draft_list, "list"),
        page("draft/<int:draft_id>/publish/", views.draft_publish, "publish"),
        page("draft/<int:draft_id>/discard/", views.draft_discard, "discard"),
        page("draft/<int:draft_id>/", views.draft_detail, "detail"),
        page("history/<path:key>/rollback/", views.template_rollback, "rollback"),
        page("history/<path:key>/", views.template_history, "history"),
    ]
