"""The journal pages. Thin: check the permission, call a selector or service, render.

``admin_site.admin_view`` only checks ``is_staff``; every view here checks its own permission.
"""

from __future__ import annotations

import itertools
import json
import time
from typing import TYPE_CHECKING, Any

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.http import urlencode

from audit.reads import read_by_console as _audit
from audit.reads import read_counted
from emailops.core.errors import EmailOpsError
from emailops.core.journal_row import JournalRow
from emailops.core.stored_attributes import AttributeRole, StoredAttribute, StoredAttributes
from templates_admin import roles
from templates_admin.console import Area, Refusal, attempt, confirmed_action, console_view
from templates_admin.journal import (
    csv_export,
    delivery,
    links,
    no_result,
    presentation,
    selectors,
)
from templates_admin.journal.forms import JournalSearchForm, ResendForm
from templates_admin.journal.services import (
    email_resend,
    new_resend_dedupe_id,
)
from templates_admin.models import EmailJournalPage
from templates_admin.suppression import selectors as suppression_selectors
from templates_admin.webhooks import selectors as webhook_selectors

if TYPE_CHECKING:
    from emailops.container import Container

AREA = Area("templates_admin/journal/", EmailJournalPage, "templates_admin/journal.css")


_entry_url = links.entry_url


@console_view(roles.SEARCH_JOURNAL)
def search(request: HttpRequest, admin_site) -> HttpResponse:
    form = JournalSearchForm(request.GET or None)
    adapters = request.container
    result, error, status, empty = None, "", 200, None
    if form.is_valid() and form.cleaned_data["q"].strip():
        _audit(request, "search", form.cleaned_data["q"], form.search_arguments())
        found = attempt(
            lambda: selectors.journal_search(adapters=adapters, **form.search_arguments()),
            unavailable="The journal could not be read",
            also={selectors.JournalSearchError: str},
        )
        if isinstance(found, Refusal):
            error, status = found.text, found.status
        else:
            result = found
            empty = attempt(
                lambda: no_result.journal_search_empty_reason(
                    found, form.search_arguments(), adapters=adapters
                ),
                unavailable="Why nothing matched could not be read",
            )
            if isinstance(empty, Refusal):
                error, empty = empty.text, None
    states = links.search_states(
        request, admin_site, result, first_page=not request.GET.get("cursor")
    )
    now = int(time.time())
    rows = [
        (
            presentation.summarize(row, now=now, lease=adapters.lease_policy),
            _entry_url(admin_site, "detail", row.key),
            links.address_url(admin_site, row.recipient),
        )
        for row in (result.rows if result else [])
    ]
    return AREA.page(
        request,
        admin_site,
        "search.html",
        {
            "title": "Email journal",
            "form": form,
            "result": result,
            "rows": rows,
            "error": error,
            "ttl_days": adapters.config.sending.journal_ttl_days,
            "older_url": _page_url(request, result.next_cursor) if result else "",
            "newer_url": _page_url(request, result.previous_cursor) if result else "",
            "export_url": _export_url(admin_site, request) if rows else "",
            "export_max_rows": selectors.EXPORT_MAX_ROWS,
            "empty": empty,
            "unfiltered_url": _without(request, "message_id", "status", "delivery"),
            "unwindowed_url": _without(request, "since", "until"),
            "states": states,
            "links": links.address_links(request, admin_site, result.query) if states else {},
            "can_release": request.user.has_perm(roles.RESEND_EMAIL),
            "held_url": reverse(f"{admin_site.name}:templates_admin_journal_held"),
        },
        status=status,
    )


def _without(request: HttpRequest, *names: str) -> str:
    """This search again without the filters ``names`` (and from its first page)."""
    dropped = {*names, "cursor"}
    return "?" + urlencode({k: v for k, v in request.GET.items() if k not in dropped and v})


def _export_url(admin_site, request: HttpRequest) -> str:
    params = {k: v for k, v in request.GET.items() if k != "cursor" and v}
    return reverse(f"{admin_site.name}:templates_admin_journal_export") + "?" + urlencode(params)


@console_view(roles.SEARCH_JOURNAL)
def export(request: HttpRequest, admin_site) -> HttpResponse:
    """The search's rows as CSV, every page of it up to EXPORT_MAX_ROWS, streamed as read."""
    form = JournalSearchForm(request.GET or None)
    search_page = reverse(f"{admin_site.name}:templates_admin_emailjournalpage_changelist")
    if not form.is_valid() or not form.cleaned_data["q"].strip():
        return redirect(f"{search_page}?{request.GET.urlencode()}")  # which says what is wrong
    arguments = form.search_arguments()
    del arguments["cursor"]
    pages = selectors.journal_search_pages(
        adapters=request.container, max_rows=selectors.EXPORT_MAX_ROWS, **arguments
    )
    try:
        first = next(pages)  # errors in the search itself still get a page, not half a file
    except selectors.JournalSearchError:
        return redirect(f"{search_page}?{request.GET.urlencode()}")
    # Audited before the first byte leaves; the row count is added once the stream ends.
    audit = _audit(request, "export", arguments["query"], arguments)

    def counted(rows: int) -> None:
        read_counted(audit=audit, rows=rows)

    lines = csv_export.csv_lines(
        itertools.chain([first], pages), max_rows=selectors.EXPORT_MAX_ROWS, on_done=counted
    )
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    name = csv_export.filename(arguments["query"], now=timezone.now())
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _page_url(request: HttpRequest, cursor: str | None) -> str:
    if not cursor:
        return ""
    params = {k: v for k, v in request.GET.items() if k != "cursor" and v}
    return "?" + urlencode(params | {"cursor": cursor})


@console_view(roles.SEARCH_JOURNAL)
def detail(request: HttpRequest, admin_site, key: str) -> HttpResponse:
    _audit(request, "detail", key)
    adapters = request.container
    entry = selectors.journal_entry(adapters=adapters, key=key)
    context: dict[str, Any] = {
        "title": "Journal row",
        "key": key,
        "entry": entry,
        "resends": [(a, _entry_url(admin_site, "detail", a.journal_key)) for a in entry.resends],
        "can_resend": request.user.has_perm(roles.RESEND_EMAIL),
        "webhook_deliveries": _webhook_deliveries(request, admin_site, key),
    }
    if entry.resent_from:
        context["resent_from_url"] = _entry_url(
            admin_site, "detail", entry.resent_from.original_key
        )
    if entry.row is None:  # never queued, expired, or a resend the consumer has not reached yet
        status = 200 if entry.resent_from else 404
        return AREA.page(request, admin_site, "detail.html", context, status=status)
    row = entry.row
    context |= {
        "subtitle": f"{row.message_id} to {row.recipient}",
        "explanation": presentation.explain_status(
            row, now=int(time.time()), lease=adapters.lease_policy
        ),
        "pill": presentation.status_pill(row, now=int(time.time()), lease=adapters.lease_policy),
        "attributes": _attributes(entry.stored),
        "delivery": delivery.delivery_outcome(row),
        "timeline": delivery.timeline(row),
        "suppression_url": _suppression_url(request, admin_site, row),
        "recipient_url": reverse(f"{admin_site.name}:templates_admin_emailjournalpage_changelist")
        + "?"
        + urlencode({"q": row.recipient}),
        "held_url": reverse(f"{admin_site.name}:templates_admin_journal_held"),
        "act": links.row_act_link(request, admin_site, row),
        "address_url": links.address_url(admin_site, row.recipient)
        if selectors.looks_like_email(row.recipient.strip())
        else "",
        "email_url": _entry_url(admin_site, "email", key)
        if selectors.journal_email_renderable(row=row, mapping_store=adapters.mapping_store)
        else "",
        "resend_url": _entry_url(admin_site, "resend", key),
        "template_version_url": links.template_version_url(request, admin_site, row),
    }
    return AREA.page(request, admin_site, "detail.html", context)


def _webhook_deliveries(request: HttpRequest, admin_site, key: str) -> list[dict[str, Any]]:
    """The row's webhook deliveries. Endpoint URLs and the delivery log are for those who manage
    webhooks; everyone who reads the row sees which events went out and how they fared."""
    manager = request.user.has_perm(roles.MANAGE_WEBHOOKS)
    shown = []
    for found in webhook_selectors.row_deliveries(key):
        shown.append(
            {
                "delivery": found,
                "endpoint": found.endpoint.url if manager else f"endpoint #{found.endpoint_id}",
                "url": reverse(
                    f"{admin_site.name}:templates_admin_webhooks_delivery", args=[found.pk]
                )
                if manager
                else "",
            }
        )
    return shown


def _suppression_url(
    request: HttpRequest, admin_site, row: JournalRow, *, always: bool = False
) -> str:
    """Where the recipient's suppression entry is, for rows that suppressed or were suppressed."""
    outcome = delivery.delivery_outcome(row)
    relevant = always or (
        outcome
        and (
            outcome.state in ("suppressed", "complained")
            or (outcome.state == "bounced" and row.delivery.permanent_bounce)
        )
    )
    if not relevant or not request.user.has_perm(roles.VIEW_SUPPRESSIONS):
        return ""
    try:
        return reverse(
            f"{admin_site.name}:templates_admin_suppression_detail",
            args=[row.recipient.strip()],  # as written: a Go row is keyed so; ours by address_key
        )
    except NoReverseMatch:  # an address no URL can carry (empty)
        return ""


def _note(item: StoredAttribute) -> str:
    """What the page says beside a stored attribute: its time, branding or meaning."""
    value = item.value
    if item.is_time:
        note = presentation.local_text(value)
        if item.role == AttributeRole.EXPIRY and note:
            return f"DynamoDB deletes the row after {note} (TTL)"
        return note
    if item.role == AttributeRole.TEMPLATE_KEY:
        return f"branding: {presentation.branding(value)}"
    if item.role == AttributeRole.TEMPLATE_VERSION and value:
        return "the published version of the template this email was rendered from"
    if item.role == AttributeRole.EVENT_TIME:
        return delivery.iso_local_text(value)
    return ""


def _attributes(stored: StoredAttributes) -> list[dict[str, str]]:
    """Every attribute of the row as stored (the reader's, masked), as (name, value, note) with
    times and branding spelled out."""
    shown = []
    for item in stored:
        value = item.value
        text = (
            json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
            if isinstance(value, dict | list)
            else str(value)
        )
        utc = presentation.utc_text(value) if item.is_time else ""
        shown.append({"name": item.name, "value": text, "note": _note(item), "utc": utc})
    return shown


@console_view(roles.SEARCH_JOURNAL)
def email(request: HttpRequest, admin_site, key: str) -> HttpResponse:
    _audit(request, "email", key)
    entry = selectors.journal_entry(adapters=request.container, key=key)
    if entry.row is None:
        return redirect(_entry_url(admin_site, "detail", key))  # which explains
    preview = selectors.journal_email_preview(adapters=request.container, row=entry.row)
    return AREA.page(
        request,
        admin_site,
        "email.html",
        {
            "title": "Email, re-rendered",
            "subtitle": f"{entry.row.message_id} to {entry.row.recipient}",
            "key": key,
            "row": entry.row,
            "preview": preview,
            "rendered_at": presentation.local_text(preview.rendered_at),
            "written_at": presentation.local_text(entry.row.timestamp),
            "detail_url": _entry_url(admin_site, "detail", key),
        },
    )


@console_view(roles.SEARCH_JOURNAL, roles.RESEND_EMAIL)
def resend(request: HttpRequest, admin_site, key: str) -> HttpResponse:
    _audit(request, "resend", key)  # the page shows the row, as the detail page does
    adapters = request.container
    entry = selectors.journal_entry(adapters=adapters, key=key)
    detail_url = _entry_url(admin_site, "detail", key)
    if entry.row is None:
        return redirect(detail_url)
    error = ""
    if request.method == "POST":
        form = ResendForm(request.POST)
        outcome = confirmed_action(
            request,
            form,
            lambda data: email_resend(
                adapters=adapters,
                key=key,
                reason=data["reason"],
                user=request.user,
                dedupe_id=data["dedupe_id"],
            ),
            unavailable="The request could not be queued",
            done=lambda action: (
                f"Resent: queued as SQS message {action.sqs_message_id}; its journal row will "
                f"be {action.journal_key}."
            ),
            then=detail_url,
        )
        if isinstance(outcome, HttpResponse):
            return outcome
        error = outcome
    else:
        form = ResendForm(initial={"dedupe_id": new_resend_dedupe_id()})
    return AREA.page(
        request,
        admin_site,
        "resend.html",
        {
            "title": "Resend this email?",
            "key": key,
            "row": entry.row,
            "summary": presentation.summarize(
                entry.row, now=int(time.time()), lease=adapters.lease_policy
            ),
            "explanation": presentation.explain_status(
                entry.row, now=int(time.time()), lease=adapters.lease_policy
            ),
            "form": form,
            "error": error,
            "detail_url": detail_url,
            "suppression": _recipient_suppression(adapters, entry.row),
            "suppression_url": _suppression_url(request, admin_site, entry.row, always=True),
        },
        status=400 if error else 200,
    )


def _recipient_suppression(adapters: Container, row: JournalRow):
    """A resend to a suppressed address is not sent (the row says SUPPRESSED): warn first."""
    try:
        return suppression_selectors.address_suppression(
            suppression_list=adapters.suppression_list, address=row.recipient
        )
    except EmailOpsError:
        return None  # the warning is a courtesy; the consumer checks the list anyway
