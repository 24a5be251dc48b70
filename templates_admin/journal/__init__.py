"""Console pages: journal. See templates_admin.admin for how they are mounted."""

from __future__ import annotations

from django.http import HttpResponse


def admin_urls(admin_site) -> list:
    return []


def changelist(request, admin_site) -> HttpResponse:
    return HttpResponse("not built yet", status=501)
