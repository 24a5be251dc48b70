"""Mapping pages inside the admin. Views are thin: forms parse, selectors read, services write.

Every view checks its own permission (``admin_view`` only checks ``is_staff``) and sends the
strict CSP. ``admin_site`` is bound by ``urls.admin_urls`` so pages get the admin's navigation.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.contrib.admin import AdminSite
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from emailops.core.errors import ConcurrentUpdate
from emailops.core.ports import TemplateMapping
from templates_admin import roles
from templates_admin.categories import category_label
from templates_admin.console import Area, Refusal, attempt, console_view
from templates_admin.mappings import selectors, services
from templates_admin.mappings.forms import (
    DEFAULT_ORG,
    MappingCreateForm,
    MappingDeleteForm,
    MappingEditForm,
    PreviewForm,
)
from templates_admin.models import TemplateMappingPage

AREA = Area("templates_admin/mappings/", TemplateMappingPage, "templates_admin/mappings.css")


def _url(name: str, **kwargs: str) -> str:
    return reverse(f"admin:templates_admin_mapping_{name}", kwargs=kwargs)


def mapping_or_404(
    request: HttpRequest, message_id: str, *, missing_ok: bool = False
) -> TemplateMapping | None:
    """The stored mapping; a 404 page without one, unless ``missing_ok`` (a form post still
    learns that the mapping was deleted meanwhile)."""
    mapping = selectors.mapping_get(
        message_id=message_id, mapping_store=request.container.mapping_store
    )
    if mapping is None and not missing_ok:
        raise Http404(f"No template mapping {message_id!r}.")
    return mapping


def override_orgs_of(request: HttpRequest, mapping: TemplateMapping) -> tuple[str, ...]:
    """The organizations with a branded copy of ``mapping``'s template file."""
    index = selectors.override_index(template_store=request.container.template_store)
    return index.get(mapping.template_file, ())


def _pickup_note(request: HttpRequest, *, deleted: bool = False) -> str:
    """How long running consumers may keep the old mapping: they cache lookups, hits and misses."""
    seconds = request.container.config.sending.template_cache_seconds
    if seconds <= 0:
        return " Consumers use the change from their next email."
    if deleted:
        return f" Consumers may still use it for up to {seconds} s (TEMPLATE_CACHE_SECONDS)."
    return f" Consumers pick this up within {seconds} s (TEMPLATE_CACHE_SECONDS)."


def _permissions(request: HttpRequest) -> dict[str, bool]:
    return {
        "can_manage": request.user.has_perm(roles.MANAGE_MAPPINGS),
        "can_preview": request.user.has_perm(roles.PREVIEW_TEMPLATES),
        "can_send_test": request.user.has_perm(roles.SEND_TEST_EMAIL),
    }


# --- List, create, edit, delete ----------------------------------------------------------------


@console_view(roles.MANAGE_MAPPINGS)
def mapping_list(request: HttpRequest, *, admin_site: AdminSite) -> HttpResponse:
    query = request.GET.get("q", "")
    rows = selectors.mapping_list(
        query=query,
        mapping_store=request.container.mapping_store,
        template_store=request.container.template_store,
    )
    context = {"title": "Template mappings", "rows": rows, "query": query}
    return AREA.page(request, admin_site, "list.html", context | _permissions(request))


@console_view(roles.MANAGE_MAPPINGS)
def mapping_add(request: HttpRequest, *, admin_site: AdminSite) -> HttpResponse:
    form = MappingCreateForm(request.POST or None)
    conflict = None
    if request.method == "POST" and form.is_valid():
        mapping = attempt(
            lambda: services.mapping_create(
                message_id=form.cleaned_data["message_id"],
                template_file=form.cleaned_data["template_file"],
                subject=form.cleaned_data["subject"],
                priority=form.cleaned_data["priority"],
                category=form.cleaned_data["category"],
                user=request.user,
                adapters=request.container,
            ),
            also={ConcurrentUpdate: lambda _: "A mapping with this message id already exists."},
        )
        if isinstance(mapping, Refusal):
            if isinstance(mapping.error, ConcurrentUpdate):
                conflict = mapping.error
                form.add_error("message_id", mapping.text)
            else:
                form.add_error(None, mapping.error)
        else:
            messages.success(
                request,
                f"Created the mapping {mapping.message_id}."
                + _critical_note(mapping)
                + _pickup_note(request),
            )
            return HttpResponseRedirect(_url("detail", message_id=mapping.message_id))
    context = {
        "title": "Add template mapping",
        "form": form,
        "conflict": conflict,
        "template_files": selectors.default_template_files(
            template_store=request.container.template_store
        ),
    }
    return AREA.page(request, admin_site, "add.html", context)


@console_view(roles.MANAGE_MAPPINGS)
def mapping_detail(request: HttpRequest, *, admin_site: AdminSite, message_id: str) -> HttpResponse:
    """The mapping's page: its edit form, branded overrides and change history."""
    mapping = mapping_or_404(request, message_id, missing_ok=request.method == "POST")
    conflict = None
    stored_category = mapping.category if mapping else ""
    if request.method == "POST":
        form = MappingEditForm(request.POST, current_category=stored_category)
        saved = _versioned_write(
            form,
            lambda data: services.mapping_update(
                message_id=message_id,
                template_file=data["template_file"],
                subject=data["subject"],
                priority=data["priority"],
                send_disabled=data["sending_off"],
                category=data["category"],
                expected_version=data["version"],
                user=request.user,
                adapters=request.container,
            ),
        )
        if isinstance(saved, Refusal):
            if isinstance(saved.error, ConcurrentUpdate):
                conflict, form = _conflicting_edit(request, saved.error, stored_category)
            else:
                form.add_error(None, saved.error)
        elif saved is not None:
            messages.success(
                request,
                f"Saved {message_id} (version {saved.version}).{_critical_note(saved)}"
                f"{_pickup_note(request)}",
            )
            return HttpResponseRedirect(_url("detail", message_id=message_id))
    else:
        form = MappingEditForm(initial=_form_values(mapping), current_category=stored_category)
    override_orgs = override_orgs_of(request, mapping) if mapping else ()
    context = {
        "title": f"Template mapping {message_id}",
        "message_id": message_id,
        "mapping": mapping,
        "form": form,
        "conflict": conflict,
        "override_orgs": override_orgs,
        "history": selectors.mapping_history(message_id=message_id),
        "template_files": selectors.default_template_files(
            template_store=request.container.template_store
        ),
        "category_label": category_label(mapping.category) if mapping else "",
        "critical_categorised": bool(
            mapping and mapping.category and mapping.priority == "critical"
        ),
    }
    return AREA.page(request, admin_site, "detail.html", context | _permissions(request))


def _critical_note(mapping: TemplateMapping) -> str:
    """A categorised critical mapping is allowed, and worth saying what it means."""
    if mapping.category and mapping.priority == "critical":
        return (
            f" It is in the category {category_label(mapping.category)}, but critical mail is "
            "never unsubscribable: recipients' preferences do not hold it back."
        )
    return ""


def _form_values(mapping: TemplateMapping) -> dict[str, Any]:
    return {
        "template_file": mapping.template_file,
        "subject": mapping.subject,
        "priority": mapping.priority,
        "sending_off": mapping.send_disabled,
        "category": mapping.category,
        "version": mapping.version,
    }


def _versioned_write(
    form: forms.Form, write: Callable[[dict[str, Any]], TemplateMapping]
) -> TemplateMapping | Refusal | None:
    """A posted edit or delete, made with the valid ``form``'s data (None when the form shows
    errors instead). It carries the version the editor saw: someone else's change meanwhile
    comes back as a ``ConcurrentUpdate`` refusal, for the page to show what is stored now."""
    if not form.is_valid():
        return None
    return attempt(lambda: write(form.cleaned_data), also={ConcurrentUpdate: str})


def _conflicting_edit(
    request: HttpRequest, exc: ConcurrentUpdate, stored_category: str = ""
) -> tuple[ConcurrentUpdate, MappingEditForm]:
    """Keep the editor's input, show what is stored now, and move the form to the current
    version: saving again is then a deliberate overwrite, made knowing what it replaces."""
    data = request.POST.copy()
    if exc.current is not None:
        data["version"] = str(exc.current.version)
    current = exc.current.category if exc.current is not None else stored_category
    form = MappingEditForm(data, current_category=current)
    form.is_valid()
    return exc, form


@console_view(roles.MANAGE_MAPPINGS)
def mapping_delete(request: HttpRequest, *, admin_site: AdminSite, message_id: str) -> HttpResponse:
    mapping = mapping_or_404(request, message_id, missing_ok=request.method == "POST")
    conflict = None
    if request.method == "POST":
        form = MappingDeleteForm(request.POST)
        deleted = _versioned_write(
            form,
            lambda data: services.mapping_delete(
                message_id=message_id,
                expected_version=data["version"],
                user=request.user,
                mapping_store=request.container.mapping_store,
            ),
        )
        if isinstance(deleted, Refusal):
            if not isinstance(deleted.error, ConcurrentUpdate):
                raise deleted.error  # as before: only a conflict is this page's to show
            conflict = deleted.error  # confirming again deletes what is stored now
            if conflict.current is not None:
                form = MappingDeleteForm(initial={"version": conflict.current.version})
        elif deleted is not None:
            messages.success(
                request, f"Deleted the mapping {message_id}." + _pickup_note(request, deleted=True)
            )
            changelist = reverse("admin:templates_admin_templatemappingpage_changelist")
            return HttpResponseRedirect(changelist)
    else:
        form = MappingDeleteForm(initial={"version": mapping.version})
    context = {
        "title": f"Delete template mapping {message_id}?",
        "message_id": message_id,
        "mapping": mapping,
        "form": form,
        "conflict": conflict,
    }
    return AREA.page(request, admin_site, "delete.html", context)


# --- Templates, preview, test send -------------------------------------------------------------


@console_view(roles.PREVIEW_TEMPLATES)
def template_source(
    request: HttpRequest, *, admin_site: AdminSite, message_id: str, org: str | None = None
) -> HttpResponse:
    """The raw template, read only: the default, or organization ``org``'s branded copy."""
    mapping = mapping_or_404(request, message_id)
    source = selectors.template_source(
        mapping=mapping, organization_id=org, template_store=request.container.template_store
    )
    key = selectors.template_key(mapping=mapping, organization_id=org)
    context = {
        "title": f"{key}",
        "mapping": mapping,
        "key": key,
        "organization_id": org,
        "lines": source.splitlines() if source is not None else None,
    }
    status = 200 if source is not None else 404
    return AREA.page(request, admin_site, "source.html", context, status=status)


@console_view(roles.PREVIEW_TEMPLATES)
def preview(request: HttpRequest, *, admin_site: AdminSite, message_id: str) -> HttpResponse:
    mapping = mapping_or_404(request, message_id)
    override_orgs = override_orgs_of(request, mapping)
    # The context travels in the POST body, never the URL (it would land in access logs); back
    # from a test send, it is the one stashed in the session.
    stashed = request.session.pop(_preview_stash(message_id), None)
    if request.method == "POST" or stashed:
        form = PreviewForm(request.POST or stashed, override_orgs=override_orgs)
    else:  # first visit: sample values, and the asked-for (or first) branded organization
        sample = selectors.preview_initial_context(mapping=mapping, adapters=request.container)
        asked = request.GET.get("organization", "")
        org = asked if asked in override_orgs else (override_orgs or (DEFAULT_ORG,))[0]
        data = {"organization": org, "context": json.dumps(sample, indent=2)}
        form = PreviewForm(data, override_orgs=override_orgs)
    result = None
    if form.is_valid():
        result = selectors.preview_render(
            mapping=mapping,
            organization_id=form.cleaned_data["organization_id"],
            context=form.cleaned_data["context"],
            adapters=request.container,
        )
    permissions = _permissions(request)
    sent = []
    if permissions["can_send_test"]:
        sent = selectors.sent_test_list(
            user=request.user, message_id=message_id, adapters=request.container
        )
    context = {
        "title": f"Preview {message_id}",
        "mapping": mapping,
        "form": form,
        "preview": result,
        "override_orgs": override_orgs,
        "sent_tests": sent,
    }
    return AREA.page(request, admin_site, "preview.html", context | permissions)


@require_POST
@console_view(roles.SEND_TEST_EMAIL)
def send_test(request: HttpRequest, *, admin_site: AdminSite, message_id: str) -> HttpResponse:
    """Queue the previewed email to the signed-in user, then go back to the same preview."""
    mapping = mapping_or_404(request, message_id)
    override_orgs = override_orgs_of(request, mapping)
    form = PreviewForm(request.POST, override_orgs=override_orgs)
    if not form.is_valid():
        messages.error(request, "Not sent: fix the organization and context first.")
    else:
        action = attempt(
            lambda: services.send_test_email(
                message_id=message_id,
                context=form.cleaned_data["context"],
                user=request.user,
                queue=request.container.queue,
            )
        )
        if isinstance(action, Refusal):
            messages.error(request, f"Not sent: {action.text}")
        else:
            messages.success(
                request,
                format_html(
                    "Test email queued to <strong>{}</strong> (dedupeId <code>{}</code>). "
                    "It is listed under “Your test sends”, linked to the journal once the "
                    "consumer has picked it up.",
                    action.recipient,
                    action.dedupe_id,
                ),
            )
    fields = ("organization", "other_organization", "context")
    request.session[_preview_stash(message_id)] = {f: request.POST.get(f, "") for f in fields}
    query = urlencode({"organization": request.POST.get("organization", "")})
    return HttpResponseRedirect(f"{_url('preview', message_id=message_id)}?{query}")


def _preview_stash(message_id: str) -> str:
    return f"preview-context:{message_id}"
