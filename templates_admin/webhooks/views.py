"""The webhooks pages (admins: ``manage_webhooks``, in no group): endpoints, their delivery log,
replays and test events. Thin: check the permission, call a selector or service, render.

A secret is shown once, in the answer to the POST that made it (adding, rotating): it is never
stored for a later page, and that answer is not cached. Replaying a range of failed deliveries is
a job: its start page is in the operations area (which runs the jobs), linked from here.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.admin import AdminSite
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from audit.reads import read_by_console
from emailops.core.errors import InvalidRequest
from emailops.core.webhook_delivery import WebhookRefused
from templates_admin import roles
from templates_admin.console import Area, Refusal, attempt, console_view
from templates_admin.models import WebhooksPage
from templates_admin.webhooks import replay, selectors
from templates_admin.webhooks.forms import EndpointForm, ReasonForm
from webhooks import endpoints, liveness
from webhooks.models import WebhookDelivery, WebhookEndpoint

AREA = Area("templates_admin/webhooks/", WebhooksPage, "templates_admin/ops.css")
_REFUSED = {WebhookRefused: lambda exc: exc.describe(), InvalidRequest: lambda exc: exc.describe()}


def url(admin_site: AdminSite, name: str, *args: Any) -> str:
    if name == "index":
        return AREA.url(admin_site)
    return reverse(f"{admin_site.name}:templates_admin_webhooks_{name}", args=args)


def _journal_url(request: HttpRequest, admin_site: AdminSite, key: str) -> str:
    if not request.user.has_perm(roles.SEARCH_JOURNAL) or key.startswith("test-"):
        return ""
    return reverse(f"{admin_site.name}:templates_admin_journal_detail", args=[key])


def _replay_range_url(request: HttpRequest, admin_site: AdminSite, endpoint: WebhookEndpoint):
    """The operations area's start page of a replay job ("" for someone who may not see jobs)."""
    if not request.user.has_perm(roles.VIEW_JOBS):
        return ""
    try:
        start = reverse(f"{admin_site.name}:templates_admin_jobs_webhook_replay")
    except NoReverseMatch:
        return ""
    return f"{start}?{urlencode({'endpoint': endpoint.pk})}"


def _secret_page(
    request: HttpRequest, admin_site: AdminSite, endpoint: WebhookEndpoint, secret: str, title: str
) -> HttpResponse:
    response = AREA.page(
        request,
        admin_site,
        "secret.html",
        {
            "title": title,
            "endpoint": endpoint,
            "secret": secret,
            "endpoint_url": url(admin_site, "endpoint", endpoint.pk),
            "overlap_until": endpoint.previous_secret_until,
        },
    )
    response["Cache-Control"] = "no-store"
    return response


@console_view(roles.MANAGE_WEBHOOKS)
def index(request: HttpRequest, *, admin_site: AdminSite) -> HttpResponse:
    listed = [(e, url(admin_site, "endpoint", e.pk)) for e in selectors.endpoint_list()]
    return AREA.page(
        request,
        admin_site,
        "list.html",
        {"title": "Webhooks", "endpoints": listed, "add_url": url(admin_site, "add")},
    )


@console_view(roles.MANAGE_WEBHOOKS)
def add(request: HttpRequest, *, admin_site: AdminSite) -> HttpResponse:
    form = EndpointForm(
        request.POST or None, allow_loopback=request.container.config.webhooks.allow_loopback
    )
    error = ""
    if request.method == "POST" and form.is_valid():
        added = attempt(
            lambda: endpoints.endpoint_add(
                adapters=request.container, **form.service_arguments(), user=request.user
            ),
            also=_REFUSED,
        )
        if not isinstance(added, Refusal):
            endpoint, secret = added
            return _secret_page(request, admin_site, endpoint, secret, "Endpoint added")
        error = added.text
    return AREA.page(
        request,
        admin_site,
        "add.html",
        {
            "title": "Add a webhook endpoint",
            "form": form,
            "error": error,
            "delivery_gap": liveness.delivery_gap(adapters=request.container, now=timezone.now()),
        },
        status=400 if error or form.errors else 200,
    )


@console_view(roles.MANAGE_WEBHOOKS)
def endpoint(request: HttpRequest, *, admin_site: AdminSite, pk: int) -> HttpResponse:
    found = get_object_or_404(WebhookEndpoint, pk=pk)
    state = request.GET.get("state", "")
    if state not in WebhookDelivery.State.values:
        state = ""
    deliveries = [
        (d, url(admin_site, "delivery", d.pk), _journal_url(request, admin_site, d.journal_key))
        for d in selectors.endpoint_deliveries(found, state=state)
    ]
    if deliveries:  # their journal keys name recipients, as the journal's pages do
        read_by_console(
            request, "webhook-deliveries", str(found.pk), {"state": state}, rows=len(deliveries)
        )
    return AREA.page(
        request,
        admin_site,
        "endpoint.html",
        {
            "title": f"Webhook endpoint #{found.pk}",
            "endpoint": found,
            "deliveries": deliveries,
            "state": state,
            "states": WebhookDelivery.State.values,
            "limit": selectors.DELIVERY_PAGE,
            "in_overlap": bool(
                found.previous_secret
                and found.previous_secret_until
                and found.previous_secret_until > timezone.now()
            ),
            "rotate_url": url(admin_site, "rotate", found.pk),
            "switch_url": url(admin_site, "switch", found.pk),
            "remove_url": url(admin_site, "remove", found.pk),
            "test_url": url(admin_site, "test", found.pk),
            "replay_range_url": _replay_range_url(request, admin_site, found),
        },
    )


@console_view(roles.MANAGE_WEBHOOKS)
def rotate(request: HttpRequest, *, admin_site: AdminSite, pk: int) -> HttpResponse:
    found = get_object_or_404(WebhookEndpoint, pk=pk)
    if request.method == "POST":
        secret = endpoints.endpoint_rotate(
            adapters=request.container, endpoint_id=found.pk, now=timezone.now(), user=request.user
        )
        found.refresh_from_db()
        return _secret_page(request, admin_site, found, secret, "Secret rotated")
    return AREA.page(
        request,
        admin_site,
        "rotate.html",
        {
            "title": "Rotate the signing secret?",
            "endpoint": found,
            "endpoint_url": url(admin_site, "endpoint", found.pk),
        },
    )


@console_view(roles.MANAGE_WEBHOOKS)
def switch(request: HttpRequest, *, admin_site: AdminSite, pk: int) -> HttpResponse:
    """Disable an enabled endpoint, or enable a disabled one: either with a reason."""
    found = get_object_or_404(WebhookEndpoint, pk=pk)
    endpoint_url = url(admin_site, "endpoint", found.pk)
    enabling = not found.enabled
    form = ReasonForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        endpoints.endpoint_set_enabled(
            endpoint_id=found.pk,
            enabled=enabling,
            reason=form.cleaned_data["reason"].strip(),
            user=request.user,
        )
        done = "enabled: deliveries resume" if enabling else "disabled: it gets nothing now"
        messages.success(request, f"Endpoint #{found.pk} {done}.")
        return redirect(endpoint_url)
    return AREA.page(
        request,
        admin_site,
        "switch.html",
        {
            "title": f"{'Enable' if enabling else 'Disable'} endpoint #{found.pk}?",
            "endpoint": found,
            "enabling": enabling,
            "form": form,
            "endpoint_url": endpoint_url,
        },
        status=400 if form.errors else 200,
    )


@console_view(roles.MANAGE_WEBHOOKS)
def remove(request: HttpRequest, *, admin_site: AdminSite, pk: int) -> HttpResponse:
    found = get_object_or_404(WebhookEndpoint, pk=pk)
    if request.method == "POST":
        endpoints.endpoint_remove(endpoint_id=found.pk, user=request.user)
        messages.success(request, f"Endpoint #{found.pk} ({found.url}) and its log removed.")
        return redirect(url(admin_site, "index"))
    return AREA.page(
        request,
        admin_site,
        "remove.html",
        {
            "title": f"Remove endpoint #{found.pk}?",
            "endpoint": found,
            "deliveries": found.deliveries.count(),
            "endpoint_url": url(admin_site, "endpoint", found.pk),
        },
    )


def _status_words(status: int | None, error: str = "") -> str:
    if status is not None:
        return f"HTTP {status}"
    return f"no answer ({error})" if error else "no answer"


@require_POST
@console_view(roles.MANAGE_WEBHOOKS)
def send_test(request: HttpRequest, *, admin_site: AdminSite, pk: int) -> HttpResponse:
    found = get_object_or_404(WebhookEndpoint, pk=pk)
    sent = replay.send_test_event(
        adapters=request.container, endpoint_id=found.pk, user=request.user
    )
    words = (
        f"Test event {sent.event_id} ({replay.TEST_EVENT_TYPE}): "
        f"{_status_words(sent.status, sent.error)} in {sent.latency_ms} ms."
    )
    (messages.success if sent.ok else messages.error)(request, words)
    return redirect(url(admin_site, "endpoint", found.pk))


@console_view(roles.MANAGE_WEBHOOKS)
def delivery(request: HttpRequest, *, admin_site: AdminSite, pk: int) -> HttpResponse:
    found = get_object_or_404(WebhookDelivery.objects.select_related("endpoint"), pk=pk)
    # The payload names the recipient: a read of personal data, audited as the journal's are.
    read_by_console(request, "webhook-delivery", found.journal_key, rows=1)
    detail = selectors.delivery_detail(
        found,
        journal_reader=request.container.journal_reader,
        sensitive=request.container.config.console.sensitive_keys,
    )
    return AREA.page(
        request,
        admin_site,
        "delivery.html",
        {
            "title": f"Delivery #{found.pk}: {found.event_type}",
            "detail": detail,
            "delivery": found,
            "endpoint_url": url(admin_site, "endpoint", found.endpoint_id),
            "journal_url": _journal_url(request, admin_site, found.journal_key),
            "replay_url": url(admin_site, "replay", found.pk),
        },
    )


@require_POST
@console_view(roles.MANAGE_WEBHOOKS)
def replay_delivery(request: HttpRequest, *, admin_site: AdminSite, pk: int) -> HttpResponse:
    found = get_object_or_404(WebhookDelivery, pk=pk)
    outcome = attempt(
        lambda: replay.delivery_replay(
            adapters=request.container, delivery_id=found.pk, user=request.user
        )
    )
    if isinstance(outcome, Refusal):
        messages.error(request, outcome.text)
    else:
        words = f"Replayed {found.event_id}: {_status_words(outcome.status)}, now {outcome.state}"
        if outcome.retry_in is not None and outcome.state == WebhookDelivery.State.PENDING:
            words += f"; the next attempt in {int(outcome.retry_in)} s"
        ok = outcome.state == WebhookDelivery.State.DELIVERED
        (messages.success if ok else messages.error)(request, words + ".")
    return redirect(url(admin_site, "delivery", found.pk))
