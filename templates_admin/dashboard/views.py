"""The front page and the pause form. Thin: check the permission, call a selector or service.

The admin index is Django's own view; ``index`` wraps it to add the dashboard's context and the
console's strict Content-Security-Policy (the charts are a static script fed by ``json_script``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.admin import AdminSite
from django.forms import Form
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from emailops.container_shared import REPUTATION_REFRESH_SECONDS
from emailops.core.errors import SharedStateUnavailable
from templates_admin import roles
from templates_admin.console import Refusal, attempt, console_view
from templates_admin.csp import strict_csp
from templates_admin.dashboard import selectors
from templates_admin.dashboard.forms import PauseForm, SendStopForm
from templates_admin.reputation import services as reputation_services


def index_view(
    admin_site: AdminSite, django_index: Callable[..., HttpResponse]
) -> Callable[..., HttpResponse]:
    """``django_index`` (the site's own index) with the dashboard for those who may see
    operations (every console role)."""

    def index(request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        context = dict(extra_context or {})
        if request.user.has_perm(roles.VIEW_JOBS):
            context["dashboard"] = selectors.dashboard(
                adapters=request.container,
                admin_site_name=admin_site.name,
                chart_hours=CHART_RANGES.get(request.GET.get("range", "")),
            )
            context["can_manage_pauses"] = request.user.has_perm(roles.MANAGE_REPUTATION)
            if context["can_manage_pauses"]:
                context["pause_form"] = PauseForm()
                context["send_stop_form"] = SendStopForm()
        return django_index(request, extra_context=context)

    return strict_csp(index)


# The charts' time range (``?range=``): the last day, or OPS_DASHBOARD_DAYS (the default).
CHART_RANGES = {"24h": 24}


@require_POST
@console_view(roles.MANAGE_REPUTATION)
def pause(request: HttpRequest, admin_site: AdminSite) -> HttpResponse:
    def change(data: dict[str, Any]) -> Any:
        change = reputation_services.pause_set if _setting(data) else reputation_services.pause_lift
        return change(
            reputation_state=request.container.reputation_state,
            priority=data["priority"],
            organization=data["organization"] or None,
            reason=data["reason"],
            user=request.user,
        )

    def done(data: dict[str, Any]) -> str:
        where = f"organization {data['organization']}" if data["organization"] else "account-wide"
        return f"{data['priority']} mail {'paused' if _setting(data) else 'resumed'} ({where})."

    form = PauseForm(request.POST)
    return _changed(request, admin_site, form, "Pause not changed", change=change, done=done)


@require_POST
@console_view(roles.MANAGE_REPUTATION)
def send_stop(request: HttpRequest, admin_site: AdminSite) -> HttpResponse:
    def change(data: dict[str, Any]) -> Any:
        stop = (
            reputation_services.send_stop_set
            if _setting(data)
            else reputation_services.send_stop_lift
        )
        return stop(
            reputation_state=request.container.reputation_state,
            reason=data["reason"],
            user=request.user,
        )

    def done(data: dict[str, Any]) -> str:
        seconds = int(REPUTATION_REFRESH_SECONDS)
        how = "stopped: every request is journaled, none sent" if _setting(data) else "resumed"
        return f"Sending {how}. Every consumer sees it within {seconds} s."

    form = SendStopForm(request.POST)
    return _changed(request, admin_site, form, "Sending not changed", change=change, done=done)


def _setting(data: dict[str, Any]) -> bool:
    return data["action"] == "set"


def _changed(
    request: HttpRequest,
    admin_site: AdminSite,
    form: Form,
    refused: str,
    *,
    change: Callable[[dict[str, Any]], Any],
    done: Callable[[dict[str, Any]], str],
) -> HttpResponse:
    """Back to the front page, saying how ``change`` of the valid ``form``'s data went (``done``
    tells the success) or why not (each error begins with ``refused``)."""
    if not form.is_valid():
        for field, errors in form.errors.items():
            messages.error(request, f"{refused}: {field}: {' '.join(errors)}")
    else:
        changed = attempt(
            lambda: change(form.cleaned_data),
            also={SharedStateUnavailable: lambda exc: f"the shared state is unavailable ({exc})."},
        )
        if isinstance(changed, Refusal):
            messages.error(request, f"{refused}: {changed.text}")
        else:
            messages.success(request, done(form.cleaned_data))
    return redirect(reverse(f"{admin_site.name}:index"))
