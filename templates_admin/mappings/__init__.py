"""Console pages: template mappings and branded preview. See templates_admin.admin for how they
are mounted; the pieces live in forms, selectors, services, views and urls."""

from __future__ import annotations

from django.contrib.admin import AdminSite
from django.http import HttpRequest, HttpResponse


# Imported on use: the submodules import this package, and models must be ready first.
def admin_urls(admin_site: AdminSite) -> list:
    from templates_admin.mappings.urls import admin_urls as urls

    return urls(admin_site)


def changelist(request: HttpRequest, admin_site: AdminSite) -> HttpResponse:
    from templates_admin.mappings.views import mapping_list

    return mapping_list(request, admin_site=admin_site)
