"""The suppression list pages. Thin: check the permission, call a selector or service, render.

``admin_site.admin_view`` only checks ``is_staff``; every view here checks its own permission.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import NoReverseMatch, reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from audit.reads import read_by_console
from emailops.aws.suppression import Suppression
from emailops.core.journal_words import suppression_reason
from templates_admin import roles
from templates_admin.categories import preference_store
from templates_admin.console import Area, Refusal, attempt, confirmed_action, console_view
from templates_admin.display import category_label, local_text, utc_text
from templates_admin.models import SuppressionListPage
from templates_admin.suppression import selectors
from templates_admin.suppression.forms import (
    ResubscribeForm,
    SuppressionRemoveForm,
    SuppressionSearchForm,
)
from templates_admin.suppression.services import preference_resubscribe, suppression_remove

AREA = Area("templates_admin/suppression/", SuppressionListPage, "templates_admin/journal.css")


def _url(admin_site, name: str, address: str) -> str:
    return reverse(f"{admin_site.name}:templates_admin_suppression_{name}", args=[address])


def _journal_url(admin_site, query: str) -> str:
    search = reverse(f"{admin_site.name}:templates_admin_emailjournalpage_changelist")
    return f"{search}?{urlencode({'q': query})}"


def _address_url(admin_site, address: str) -> str:
    """The journal's address page (sends, suppression, preferences); "" for no address."""
    if "@" not in address:
        return ""
    try:
        return reverse(f"{admin_site.name}:templates_admin_journal_address", args=[address.strip()])
    except NoReverseMatch:
        return ""


def _shown(entry: Suppression, admin_site) -> dict[str, Any]:
    """An entry with its words, times and links, for the templates."""
    return {
        "entry": entry,
        "reason": suppression_reason(entry.reason),
        "since": local_text(entry.created_at),
        "since_utc": utc_text(entry.created_at),
        "url": _url(admin_site, "detail", entry.address),
        "address_url": _address_url(admin_site, entry.address),
    }


@console_view(roles.VIEW_SUPPRESSIONS)
def search(request: HttpRequest, admin_site) -> HttpResponse:
    form = SuppressionSearchForm(request.GET or None)
    prefix, cursor = "", None
    if form.is_valid():
        prefix, cursor = form.cleaned_data["q"], form.cleaned_data["cursor"] or None
    error, status, page = "", 200, None
    found = attempt(
        lambda: selectors.suppression_search(
            suppression_list=request.container.suppression_list, prefix=prefix, cursor=cursor
        ),
        also={selectors.InvalidCursor: str},
    )
    if isinstance(found, Refusal):
        error, status = found.text, found.status
    else:
        page = found
        if page.entries:  # the addresses listed are personal data
            read_by_console(request, "suppression-list", prefix, rows=len(page.entries))
    next_url = ""
    if page and page.next_cursor:
        next_url = "?" + urlencode({"q": page.prefix, "cursor": page.next_cursor})
    return AREA.page(
        request,
        admin_site,
        "list.html",
        {
            "title": "Suppression list",
            "form": form,
            "page": page,
            "entries": [_shown(e, admin_site) for e in page.entries] if page else [],
            "error": error,
            "next_url": next_url,
            "first_url": "?" + urlencode({"q": page.prefix}) if page and cursor else "",
            "address_url": _address_url(admin_site, prefix) if page and not page.entries else "",
        },
        status=status,
    )


@console_view(roles.VIEW_SUPPRESSIONS)
def detail(request: HttpRequest, admin_site, address: str) -> HttpResponse:
    return _detail_page(request, admin_site, address)


def _detail_page(
    request: HttpRequest,
    admin_site,
    address: str,
    *,
    resubscribe_form: ResubscribeForm | None = None,
    resubscribe_error: str = "",
    status: int = 200,
) -> HttpResponse:
    """The address's page: its suppression, its removals, and its preferences per category."""
    found = selectors.suppression_entry(
        suppression_list=request.container.suppression_list, address=address
    )
    read_by_console(request, "suppression-entry", address, rows=int(bool(found.suppression)))
    context: dict[str, Any] = {
        "preferences": selectors.address_preferences(
            preference_store=preference_store(request.container), address=found.address
        ),
        "resubscribe_url": _url(admin_site, "resubscribe", found.address),
        "resubscribe_form": resubscribe_form or ResubscribeForm(),
        "resubscribe_error": resubscribe_error,
        "title": "Suppressed address" if found.suppression else "Not suppressed",
        "address": found.address,
        "found": found,
        "shown": _shown(found.suppression, admin_site) if found.suppression else None,
        "can_remove": request.user.has_perm(roles.REMOVE_SUPPRESSION),
        "remove_url": _url(admin_site, "remove", found.address),
        "journal_url": _journal_url(admin_site, found.address),
        "address_url": _address_url(admin_site, found.address),
    }
    if found.suppression and found.suppression.source:
        context["source_url"] = _journal_url(admin_site, found.suppression.source)
    return AREA.page(request, admin_site, "detail.html", context, status=status)


@require_POST
@console_view(roles.VIEW_SUPPRESSIONS, roles.REMOVE_SUPPRESSION)
def resubscribe(request: HttpRequest, admin_site, address: str) -> HttpResponse:
    """Subscribe the address to one category again, at the recipient's request (ticked)."""
    form = ResubscribeForm(request.POST)
    outcome = confirmed_action(
        request,
        form,
        lambda data: preference_resubscribe(
            preference_store=preference_store(request.container),
            address=address,
            category=data["category"],
            reason=data["reason"],
            user=request.user,
            recipient_asked=data["recipient_asked"],
        ),
        unavailable="The preference could not be changed",
        done=lambda change: (
            f"{address} is subscribed to {category_label(change.category)} again: those "
            "emails will be sent to it."
        ),
        then=_url(admin_site, "detail", address),
    )
    if isinstance(outcome, HttpResponse):
        return outcome
    return _detail_page(
        request,
        admin_site,
        address,
        resubscribe_form=form,
        resubscribe_error=outcome,
        status=400,
    )


@console_view(roles.VIEW_SUPPRESSIONS, roles.REMOVE_SUPPRESSION)
def remove(request: HttpRequest, admin_site, address: str) -> HttpResponse:
    found = selectors.suppression_entry(
        suppression_list=request.container.suppression_list, address=address
    )
    read_by_console(request, "suppression-entry", address, rows=int(bool(found.suppression)))
    detail_url = _url(admin_site, "detail", found.address)
    if found.suppression is None:
        messages.info(request, f"{found.address} is not on the suppression list.")
        return redirect(detail_url)
    complaint = found.suppression.reason == "complaint"
    error = ""
    if request.method == "POST":
        form = SuppressionRemoveForm(request.POST, complaint=complaint)
        outcome = confirmed_action(
            request,
            form,
            lambda data: suppression_remove(
                suppression_list=request.container.suppression_list,
                address=found.address,
                reason=data["reason"],
                user=request.user,
                recipient_asked=data.get("recipient_asked", False),
            ),
            unavailable="The suppression list could not be changed",
            done=lambda _: (
                f"Removed {found.address} from the suppression list: emails to it will be "
                "sent again."
            ),
            then=detail_url,
        )
        if isinstance(outcome, HttpResponse):
            return outcome
        error = outcome
    else:
        form = SuppressionRemoveForm(complaint=complaint)
    return AREA.page(
        request,
        admin_site,
        "remove.html",
        {
            "title": "Remove from the suppression list?",
            "address": found.address,
            "shown": _shown(found.suppression, admin_site),
            "complaint": complaint,
            "form": form,
            "error": error,
            "detail_url": detail_url,
        },
        status=400 if error or form.errors else 200,
    )
