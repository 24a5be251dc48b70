"""The journal's pages under /admin/templates_admin/emailjournalpage/ (the search is the
changelist itself). Specific suffixes come first: a key may contain slashes."""

from __future__ import annotations

from functools import partial

from django.urls import URLPattern, path

from templates_admin.journal import address_views, held_views, views


def admin_urls(admin_site) -> list[URLPattern]:
    def page(view):
        return admin_site.admin_view(partial(view, admin_site=admin_site))

    return [
        path("held/", page(held_views.held), name="templates_admin_journal_held"),
        path(
            "address/<path:address>/",
            page(address_views.address),
            name="templates_admin_journal_address",
        ),
        path("export.csv", page(views.export), name="templates_admin_journal_export"),
        path("entry/<path:key>/email/", page(views.email), name="templates_admin_journal_email"),
        path("entry/<path:key>/resend/", page(views.resend), name="templates_admin_journal_resend"),
        path("entry/<path:key>/", page(views.detail), name="templates_admin_journal_detail"),
    ]
