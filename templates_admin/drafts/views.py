"""Draft pages inside the admin: list per messageId, create, the replay preview with the check,
publish, discard, and per-file history with diffs and rollback. Views are thin: forms parse,
selectors read, services write; every view checks its own permission and sends the strict CSP.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.admin import AdminSite
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from audit.reads import read_by_console
from emailops.core.template_findings import organization_of_key
from templates_admin import roles
from templates_admin.console import Area, Refusal, attempt, console_view
from templates_admin.drafts import check, preview, selectors, services
from templates_admin.drafts.forms import (
    NEW_ORG_TARGET,
    DraftCreateForm,
    PublishForm,
    ReplayForm,
    RollbackForm,
)
from templates_admin.mappings import selectors as mapping_selectors
from templates_admin.mappings.views import mapping_or_404, override_orgs_of
from templates_admin.models import TemplateDraft, TemplateMappingPage

AREA = Area("templates_admin/drafts/", TemplateMappingPage, "templates_admin/mappings.css")


def _url(name: str, **kwargs: Any) -> str:
    return reverse(f"admin:templates_admin_draft_{name}", kwargs=kwargs)


def _pickup_note(request: HttpRequest) -> str:
    seconds = request.container.config.sending.template_cache_seconds
    if seconds <= 0:
        return "Consumers use it from their next email."
    return (
        f"It takes effect within {seconds} s, the consumers' cache time (TEMPLATE_CACHE_SECONDS)."
    )


def _draft_or_404(draft_id: int) -> TemplateDraft:
    try:
        return selectors.draft_get(draft_id=draft_id)
    except TemplateDraft.DoesNotExist:
        raise Http404(f"No draft {draft_id}.") from None


# --- List and create ---------------------------------------------------------------------------


@console_view(roles.MANAGE_MAPPINGS)
def draft_list(request: HttpRequest, *, admin_site: AdminSite, message_id: str) -> HttpResponse:
    mapping = mapping_or_404(request, message_id)
    override_orgs = override_orgs_of(request, mapping)
    keys = [mapping_selectors.template_key(mapping=mapping, organization_id=None)] + [
        mapping_selectors.template_key(mapping=mapping, organization_id=org)
        for org in override_orgs
    ]
    context = {
        "title": f"Drafts of {message_id}",
        "mapping": mapping,
        "drafts": selectors.drafts_for_message(message_id=message_id),
        "files": keys,
        "now": timezone.now(),
    }
    return AREA.page(request, admin_site, "list.html", context)


@console_view(roles.MANAGE_MAPPINGS)
def draft_create(request: HttpRequest, *, admin_site: AdminSite, message_id: str) -> HttpResponse:
    """Paste, upload, or (``?target=…&load=1``) edit the current source of the chosen file."""
    mapping = mapping_or_404(request, message_id)
    override_orgs = override_orgs_of(request, mapping)
    options = {"template_file": mapping.template_file, "override_orgs": override_orgs}
    if request.method == "POST":
        form = DraftCreateForm(request.POST, request.FILES, **options)
        if form.is_valid():
            draft = attempt(
                lambda: services.draft_create(
                    key=form.cleaned_data["key"],
                    source=form.cleaned_data["source"],
                    subject=form.cleaned_data["subject"] or None,
                    message_id=message_id,
                    user=request.user,
                    adapters=request.container,
                    from_editor=form.cleaned_data["from_editor"],
                )
            )
            if isinstance(draft, Refusal):
                form.add_error(None, draft.error)
            else:
                messages.success(request, f"Draft #{draft.pk} created for {draft.key}.")
                return HttpResponseRedirect(_url("detail", draft_id=draft.pk))
    else:
        target = request.GET.get("target", "default")
        form = DraftCreateForm(initial={"target": target}, **options)
        if request.GET.get("load"):
            key = form.target_key(target, request.GET.get("new_organization", ""))
            source = None
            if key is not None:
                source, _version = selectors.published_source(
                    key=key, template_store=request.container.template_store
                )
            form = DraftCreateForm(
                initial={
                    "target": target,
                    "new_organization": request.GET.get("new_organization", ""),
                    "source": source or "",
                },
                **options,
            )
    # One file picker (the form's): the files that exist are offered as "load" links, not a second one.
    loadable = [c for c in form.fields["target"].choices if c[0] != NEW_ORG_TARGET]
    context = {
        "title": f"New draft of {message_id}",
        "mapping": mapping,
        "form": form,
        "loadable": loadable,
    }
    return AREA.page(request, admin_site, "create.html", context)


# --- One draft: the replay preview, the check, publish, discard ---------------------------------


@console_view(roles.MANAGE_MAPPINGS)
def draft_detail(request: HttpRequest, *, admin_site: AdminSite, draft_id: int) -> HttpResponse:
    return _detail_page(request, admin_site, _draft_or_404(draft_id), PublishForm())


def _detail_page(
    request: HttpRequest, admin_site: AdminSite, draft: TemplateDraft, publish_form: PublishForm
) -> HttpResponse:
    # The chosen send travels in the POST body: its journal key may hold the address.
    replay = ReplayForm(request.POST if request.POST.get("replay") else None)
    send_key, count = None, preview.DEFAULT_REPLAY_COUNT
    if replay.is_valid():
        send_key = replay.cleaned_data["send"] or None
        count = replay.cleaned_data["count"] or count
    result = preview.draft_preview(
        draft=draft, adapters=request.container, send_key=send_key, count=count
    )
    if result.sends.sends:  # recent recipients and their (masked) contexts: personal data
        read_by_console(
            request, "replay", draft.message_id, {"count": count}, rows=len(result.sends.sends)
        )
    # The sends the preview read already: one bounded journal Scan per page view, not two.
    verdict = check.draft_verdict(draft=draft, adapters=request.container, sends=result.sends.sends)
    context = {
        "title": f"Draft #{draft.pk}: {draft.key}",
        "draft": draft,
        "organization": organization_of_key(draft.key),
        "preview": result,
        "count": count,
        "verdict": verdict,
        "errors": verdict.errors,
        "warnings": verdict.new_warnings,
        "inherited_warnings": verdict.inherited_warnings,
        "notes": verdict.notes,
        "spam_scores": [f for f in verdict.findings if f.rule == "spam-score"],
        "publish_form": publish_form,
        "pickup_note": _pickup_note(request),
        "is_open": draft.is_open,
    }
    return AREA.page(request, admin_site, "detail.html", context)


@require_POST
@console_view(roles.MANAGE_MAPPINGS)
def draft_publish(request: HttpRequest, *, admin_site: AdminSite, draft_id: int) -> HttpResponse:
    draft = _draft_or_404(draft_id)
    form = PublishForm(request.POST)
    back = _url("detail", draft_id=draft.pk)
    if not form.is_valid():
        messages.error(request, "Not published: give a reason.")
        return _detail_page(request, admin_site, draft, form)
    version = attempt(
        lambda: services.draft_publish(
            draft_id=draft.pk,
            user=request.user,
            reason=form.cleaned_data["reason"],
            adapters=request.container,
            accept_warnings=form.cleaned_data["accept_warnings"],
        ),
        also={
            services.DraftConflict: lambda exc: (
                f"{exc}."
                if exc.finish  # its file is out; the subject is what is left
                else f"{draft.key} changed since this draft was made ({exc}). "
                "Start a new draft from the current version."
            ),
            services.CheckFailed: lambda exc: f"the check found {len(exc.findings)} error(s).",
            services.WarningsNotAccepted: lambda exc: (
                f"the check found {len(exc.findings)} warning(s); confirm them to publish."
            ),
        },
    )
    if isinstance(version, Refusal):
        # Unconfirmed warnings are the one refusal that is the person's next step, not an error.
        warned = isinstance(version.error, services.WarningsNotAccepted)
        level = messages.WARNING if warned else messages.ERROR
        prefix = "Not finished" if getattr(version.error, "finish", False) else "Not published"
        messages.add_message(request, level, f"{prefix}: {version.text}")
        # The page again, not a redirect: the reason the person typed stays in the form.
        return _detail_page(request, admin_site, draft, form)
    else:
        if version is None:  # the draft changed only the subject
            messages.success(
                request, f"Published the new subject of {draft.message_id}. {_pickup_note(request)}"
            )
            return HttpResponseRedirect(_url("list", message_id=draft.message_id))
        messages.success(
            request,
            f"Published {draft.key} as version {version.version_id}. {_pickup_note(request)}",
        )
        return HttpResponseRedirect(_url("history", key=draft.key))
    return HttpResponseRedirect(back)


@require_POST
@console_view(roles.MANAGE_MAPPINGS)
def draft_discard(request: HttpRequest, *, admin_site: AdminSite, draft_id: int) -> HttpResponse:
    draft = _draft_or_404(draft_id)
    refused = attempt(
        lambda: services.draft_discard(
            draft_id=draft.pk, user=request.user, template_store=request.container.template_store
        )
    )
    if isinstance(refused, Refusal):
        messages.error(request, refused.text)
        return HttpResponseRedirect(_url("detail", draft_id=draft.pk))
    messages.success(request, f"Discarded draft #{draft.pk}.")
    if draft.message_id:
        return HttpResponseRedirect(_url("list", message_id=draft.message_id))
    return HttpResponseRedirect(reverse("admin:templates_admin_templatemappingpage_changelist"))


# --- History, diff, rollback -------------------------------------------------------------------


@console_view(roles.MANAGE_MAPPINGS)
def template_history(request: HttpRequest, *, admin_site: AdminSite, key: str) -> HttpResponse:
    """Every published version of ``key``, newest first; ``?old=&new=`` diffs two of them."""
    versions = selectors.template_history(key=key)
    ids = [v.version_id for v in versions]
    old, new = request.GET.get("old", ""), request.GET.get("new", "")
    if not (old in ids and new in ids) and len(ids) >= 2 and not (old or new):
        old, new = ids[1], ids[0]  # by default, what the last publish changed
    diff, diff_error = None, ""
    store = request.container.template_store
    if old in ids and new in ids:
        try:
            diff = preview.diff_lines(
                selectors.version_diff(key=key, old=old, new=new, template_store=store)
            )
        except selectors.VersionNotFound as exc:
            diff_error = str(exc)
    _source, current = selectors.published_source(key=key, template_store=store)
    context = {
        "title": f"History of {key}",
        "key": key,
        "versions": versions,
        "old": old,
        "new": new,
        "diff": diff,
        "diff_error": diff_error,
        "current": current,
        "rollback_form": RollbackForm(),
        "pickup_note": _pickup_note(request),
    }
    return AREA.page(request, admin_site, "history.html", context)


@require_POST
@console_view(roles.MANAGE_MAPPINGS)
def template_rollback(request: HttpRequest, *, admin_site: AdminSite, key: str) -> HttpResponse:
    form = RollbackForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Not rolled back: give a reason.")
    else:
        version = attempt(
            lambda: services.template_rollback(
                key=key,
                version_id=form.cleaned_data["version"],
                user=request.user,
                reason=form.cleaned_data["reason"],
                template_store=request.container.template_store,
            ),
            also={services.DraftConflict: str},
        )
        if isinstance(version, Refusal):
            messages.error(request, f"Not rolled back: {version.text}")
        else:
            messages.success(
                request,
                f"Rolled {key} back to {form.cleaned_data['version']} as version "
                f"{version.version_id}. {_pickup_note(request)}",
            )
    return HttpResponseRedirect(_url("history", key=key))
