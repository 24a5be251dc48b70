"""What every console page shares: its area's frame (``Area.page``, the one page helper), its
permission check and strict CSP (``console_view``), the one mapping of what a service refused to
the words and status a page shows (``attempt``), and AWS trouble nobody worded shown as an admin
page (503) instead of a server error.

``admin_view`` only checks ``is_staff``; each page names the permissions it needs here, so the
check is on the server, next to the view.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from django import forms
from django.contrib import messages
from django.contrib.admin import AdminSite
from django.core.exceptions import ValidationError
from django.db.models import Model
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from emailops.core.errors import ConcurrentUpdate, EmailOpsError
from templates_admin import roles
from templates_admin.csp import POLICY, strict_csp

__all__ = ["Area", "Refusal", "attempt", "confirmed_action", "console_view", "refused_page"]

T = TypeVar("T")


@dataclass(frozen=True)
class Area:
    """One console area's pages: where its templates are, the placeholder model whose admin entry
    they sit under (breadcrumbs, the shared ``templates_admin/base.html``), its stylesheet, and
    what else every page of the area shows (``extra``, from the request)."""

    templates: str  # the folder, e.g. "templates_admin/journal/"
    page_model: type[Model]
    stylesheet: str  # a static path, e.g. "templates_admin/journal.css"
    extra: Callable[[HttpRequest], dict[str, Any]] | None = None

    def url(self, admin_site: AdminSite) -> str:
        """The area's entry page (its placeholder's changelist) on ``admin_site``."""
        opts = self.page_model._meta
        return reverse(f"{admin_site.name}:{opts.app_label}_{opts.model_name}_changelist")

    def page(
        self,
        request: HttpRequest,
        admin_site: AdminSite,
        template: str,
        context: dict[str, Any],
        *,
        status: int = 200,
    ) -> TemplateResponse:
        """A console page inside the admin: the site's navigation, the area's ``opts``, entry
        link and stylesheet, its ``extra``, then the view's own context."""
        context = {
            **admin_site.each_context(request),
            "opts": self.page_model._meta,
            "area_url": self.url(admin_site),
            "area_stylesheet": self.stylesheet,
            **(self.extra(request) if self.extra else {}),
            **context,
        }
        return TemplateResponse(request, self.templates + template, context, status=status)


@dataclass(frozen=True)
class Refusal:
    """A service call that did not happen, as the page tells it: ``text`` (the words), ``status``
    (400 for what the person can fix, 502 for AWS trouble) and the ``error`` itself."""

    text: str
    status: int
    error: Exception


Wording = Callable[[Any], str]


def attempt(
    call: Callable[[], T],
    *,
    unavailable: str = "",
    also: Mapping[type[Exception], Wording] | None = None,
) -> T | Refusal:
    """Run a service call; what a person may be told comes back as a ``Refusal`` instead of
    raising. The one mapping of the console's errors to words, checked in this order:

    - ``also``: the view's own exceptions (a search's bad input, a publish's conflict) and their
      words, status 400;
    - a ``ValidationError``: its messages, 400;
    - AWS trouble (``EmailOpsError``), when the view names what did not happen (``unavailable``,
      e.g. "The request could not be queued"): "<unavailable>: <what went wrong>", 502. Without
      it, and for a ``ConcurrentUpdate`` not named in ``also``, the error goes on to
      ``console_view`` (the 503 page; a conflict escaping is a bug).

    Anything else is not a refusal and is raised.
    """
    try:
        return call()
    except Exception as exc:
        for kind, words in (also or {}).items():
            if isinstance(exc, kind):
                return Refusal(words(exc), 400, exc)
        if isinstance(exc, ValidationError):
            return Refusal(" ".join(exc.messages), 400, exc)
        if unavailable and isinstance(exc, EmailOpsError) and not isinstance(exc, ConcurrentUpdate):
            return Refusal(f"{unavailable}: {exc.describe()}", 502, exc)
        raise


def confirmed_action(
    request: HttpRequest,
    form: forms.Form,
    action: Callable[[dict[str, Any]], T],
    *,
    unavailable: str,
    done: Callable[[T], str],
    then: str,
) -> HttpResponseRedirect | str:
    """A confirmation page's POST: run ``action`` with the valid form's data (through
    ``attempt``); once done, flash ``done(result)`` and redirect to ``then``. Otherwise the
    words the page shows above the form: the refusal's text, or "" when the form itself has
    errors to show."""
    if not form.is_valid():
        return ""
    result = attempt(lambda: action(form.cleaned_data), unavailable=unavailable)
    if isinstance(result, Refusal):
        return result.text
    messages.success(request, done(result))
    return HttpResponseRedirect(then)


def refused_page(
    request: HttpRequest, admin_site: AdminSite, permissions: tuple[str, ...] | list[str]
) -> TemplateResponse:
    """The 403 as a console page: the site's navigation and one line naming the group that
    grants ``permissions``."""
    context = {
        **admin_site.each_context(request),
        "title": "Not open to you",
        "refusal": roles.refusal_words(permissions),
    }
    return TemplateResponse(request, "templates_admin/refused.html", context, status=403)


def console_view(*permissions: str, policy: str = POLICY) -> Callable:
    """Decorate a view taking ``admin_site`` as a keyword: without ``permissions``, the 403
    console page naming the group that grants them; the page gets the Content-Security-Policy
    ``policy``."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args: Any, admin_site: AdminSite, **kwargs: Any):
            if not request.user.has_perms(permissions):
                return refused_page(request, admin_site, permissions)
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
