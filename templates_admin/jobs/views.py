"""Operations pages: the job list, the dead-letter queue, bulk resend, template check, and each
job's page with its progress bar. Thin: check the permission, call a selector or service, render.

Job pages poll ``progress/`` with a small static script, so they get the strict policy plus
``connect-src 'self'`` (``POLLING_POLICY``); every other page keeps the plain strict one.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.admin import AdminSite
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from audit.reads import read_by_console
from jobs import engine, registry
from jobs.models import Job
from templates_admin import roles
from templates_admin.console import Area, console_view
from templates_admin.csp import POLLING_POLICY
from templates_admin.jobs import bulk_resend as bulk_resend_service
from templates_admin.jobs import dlq, selectors
from templates_admin.jobs.forms import (
    BulkResendForm,
    EraseRecipientForm,
    RedriveForm,
    WebhookReplayForm,
)
from templates_admin.models import OperationsPage


def _permissions(request: HttpRequest) -> dict[str, bool]:
    user = request.user
    return {
        "can_redrive": user.has_perm(roles.REDRIVE_DEAD_LETTERS),
        "can_bulk_resend": user.has_perm(roles.BULK_RESEND),
        "can_check_templates": user.has_perm(roles.CHECK_TEMPLATES),
        "can_erase_recipient": user.has_perm(roles.ERASE_RECIPIENT),
    }


AREA = Area("templates_admin/jobs/", OperationsPage, "templates_admin/ops.css", extra=_permissions)


def url(admin_site: AdminSite, name: str, *args: Any) -> str:
    if name == "index":
        return reverse(f"{admin_site.name}:templates_admin_operationspage_changelist")
    return reverse(f"{admin_site.name}:templates_admin_jobs_{name}", args=args)


def _start(request: HttpRequest, admin_site: AdminSite, kind: str, inputs: dict[str, Any]):
    job = engine.job_create(kind=kind, inputs=inputs, user=request.user)
    messages.success(request, f"{job.get_kind_display()} started as job #{job.pk}.")
    return redirect(url(admin_site, "job", job.pk))


@console_view(roles.VIEW_JOBS)
def index(request: HttpRequest, *, admin_site: AdminSite) -> HttpResponse:
    return AREA.page(
        request,
        admin_site,
        "index.html",
        {
            "title": "Operations",
            "jobs": [(job, url(admin_site, "job", job.pk)) for job in selectors.job_list()],
            "readings": selectors.ops_readings(),
        },
    )


@console_view(roles.VIEW_JOBS)
def dead_letters(request: HttpRequest, *, admin_site: AdminSite) -> HttpResponse:
    """Shows what the latest listing job read; reading the queue again is a job of its own
    (receiving hides the messages for a while and counts a receive)."""
    form = None
    if request.method == "POST" and "read" in request.POST:
        return _start(request, admin_site, Job.Kind.DLQ_LIST, {"limit": 100})
    if request.method == "POST":
        if not request.user.has_perm(roles.REDRIVE_DEAD_LETTERS):
            return AREA.page(
                request, admin_site, "denied.html", {"title": "Not allowed"}, status=403
            )
        form = RedriveForm(request.POST)
        if form.is_valid():
            return _start(request, admin_site, Job.Kind.DLQ_REDRIVE, form.cleaned_data["inputs"])
    latest, done, listing = dlq.dead_letter_listing()
    if listing and listing.messages:  # addresses and contexts of the dead-lettered requests
        read_by_console(request, "dead-letters", "", rows=len(listing.messages))
    if form is None:
        form = RedriveForm(ids=[m.message_id for m in listing.messages] if listing else [])
    return AREA.page(
        request,
        admin_site,
        "dlq.html",
        {
            "title": "Dead-letter queue",
            "latest": latest,
            "latest_url": url(admin_site, "job", latest.pk) if latest else "",
            "listed": done,
            "listed_url": url(admin_site, "job", done.pk) if done else "",
            "listing": listing,
            "form": form,
        },
        status=400 if form.errors else 200,
    )


def _job_form(
    request: HttpRequest,
    admin_site: AdminSite,
    form_class,
    kind: str,
    template: str,
    title: str,
    initial: dict[str, Any] | None = None,
    **form_arguments: Any,
) -> HttpResponse:
    """A job's start page: its form, and on a valid POST the job started with the form's inputs."""
    form = form_class(request.POST or None, initial=initial, **form_arguments)
    if request.method == "POST" and form.is_valid():
        return _start(request, admin_site, kind, form.cleaned_data["inputs"])
    return AREA.page(
        request,
        admin_site,
        template,
        {"title": title, "form": form},
        status=400 if form.errors else 200,
    )


@console_view(roles.VIEW_JOBS, roles.BULK_RESEND)
def bulk_resend(request: HttpRequest, *, admin_site: AdminSite) -> HttpResponse:
    rate = bulk_resend_service.default_rate(adapters=request.container)
    return _job_form(
        request, admin_site, BulkResendForm, Job.Kind.BULK_RESEND, "bulk_resend.html",
        "Bulk resend", initial={"rate": rate},
    )  # fmt: skip


@console_view(roles.VIEW_JOBS, roles.ERASE_RECIPIENT)
def erase_recipient(request: HttpRequest, *, admin_site: AdminSite) -> HttpResponse:
    return _job_form(
        request, admin_site, EraseRecipientForm, Job.Kind.ERASE_RECIPIENT,
        "erase_recipient.html", "Erase a recipient", adapters=request.container,
    )  # fmt: skip


@console_view(roles.VIEW_JOBS, roles.MANAGE_WEBHOOKS)
def webhook_replay(request: HttpRequest, *, admin_site: AdminSite) -> HttpResponse:
    """Started from a webhook endpoint's page (``?endpoint=`` chooses it)."""
    return _job_form(
        request, admin_site, WebhookReplayForm, Job.Kind.WEBHOOK_REPLAY, "webhook_replay.html",
        "Replay failed webhook deliveries", initial={"endpoint": request.GET.get("endpoint")},
    )  # fmt: skip


@console_view(roles.VIEW_JOBS, roles.CHECK_TEMPLATES)
def template_check(request: HttpRequest, *, admin_site: AdminSite) -> HttpResponse:
    if request.method == "POST":
        return _start(request, admin_site, Job.Kind.TEMPLATE_CHECK, {})
    last = Job.objects.filter(kind=Job.Kind.TEMPLATE_CHECK).first()
    return AREA.page(
        request,
        admin_site,
        "template_check.html",
        {
            "title": "Template check",
            "last": last,
            "last_url": url(admin_site, "job", last.pk) if last else "",
        },
    )


@console_view(roles.VIEW_JOBS, policy=POLLING_POLICY)
def job(request: HttpRequest, *, admin_site: AdminSite, pk: int) -> HttpResponse:
    found = get_object_or_404(Job.objects.select_related("created_by"), pk=pk)
    if not selectors.job_details_allowed(found, request.user):
        return AREA.page(request, admin_site, "denied.html", {"title": "Not allowed"}, status=403)
    inputs, steps = (
        selectors.job_inputs_shown(found, request.user),
        list(selectors.job_steps(found)),
    )
    if steps or inputs.get("recipients"):  # step keys are journal keys, which name recipients
        read_by_console(request, "job", str(found.pk), {"kind": found.kind}, rows=len(steps))
    return AREA.page(
        request,
        admin_site,
        "job.html",
        {
            "title": f"{found.get_kind_display()} #{found.pk}",
            "job": found,
            "inputs": inputs,
            "progress": selectors.job_progress(found),
            "steps": steps,
            "progress_url": url(admin_site, "job_progress", found.pk),
            "retry_url": url(admin_site, "job_retry", found.pk),
            "dlq_url": url(admin_site, "dlq"),
            "can_retry": (found.state == Job.State.FAILED or engine.job_is_orphaned(found))
            and request.user.has_perm(registry.permission_of(found.kind)),
        },
    )


@console_view(roles.VIEW_JOBS)
def job_progress(request: HttpRequest, *, admin_site: AdminSite, pk: int) -> HttpResponse:
    found = get_object_or_404(Job, pk=pk)
    if not selectors.job_details_allowed(found, request.user):
        return JsonResponse({"error": "not allowed"}, status=403)
    response = JsonResponse(selectors.job_progress(found))
    response["Cache-Control"] = "no-store"
    return response


@require_POST
@console_view(roles.VIEW_JOBS)
def job_retry(request: HttpRequest, *, admin_site: AdminSite, pk: int) -> HttpResponse:
    found = get_object_or_404(Job, pk=pk)
    engine.job_retry(job_id=found.pk, user=request.user)
    messages.info(request, f"Job #{found.pk} resumes where it stopped.")
    return redirect(url(admin_site, "job", found.pk))
