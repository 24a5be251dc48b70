"""What every console page shares: its permission check, the strict CSP, and AWS trouble shown as
an admin page (503) instead of a server error.

``admin_view`` only checks ``is_staff``; each page names the permissions it needs here, so the
check is on the server, next to the view.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib.admin import AdminSite
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from emailops.core.errors import ConcurrentUpdate, EmailOpsError
from templates_admin.csp import POLICY, strict_csp

__all__ = ["admin_page", "console_view"]


def admin_page(
    request: HttpRequest,
    admin_site: AdminSite,
    template: str,
    context: dict[str, Any],
    *,
    opts: Any,
    status: int = 200,
) -> TemplateResponse:
    """A console page inside the admin: the site's navigation, the placeholder model's ``opts``
    (breadcrumbs), then the view's own context."""
    context = {**admin_site.each_context(request), "opts": opts, **context}
    return TemplateResponse(request, template, context, status=status)


def console_view(*permissions: str, policy: str = POLICY) -> Callable:
    """Decorate a view taking ``admin_site`` as a keyword: 403 without ``permissions``; the page
    gets the Content-Security-Policy ``policy``."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args: Any, admin_site: AdminSite, **kwargs: Any):
            if not request.user.has_perms(permissions):
                raise PermissionDenied
            try:
                return view(request, *args, admin_site=admin_site, **kwargs)
            except ConcurrentUpdate:
                raise  # views handle conflicts themselves; one escaping here is a bug
            except EmailOpsError as exc:
                context = {
                    **admin_site.each_context(request),
                    "title": "Email service unavailable",
                    "error": exc.describe(),
                }
                return TemplateResponse(
                    request, "templates_admin/unavailable.html", context, status=503
                )

        return strict_csp(wrapped, policy=policy)

    return decorate
