"""Where the journal's pages point for one address or row: its row, the address page, the held
list, its suppression entry and preferences. Each is offered only to a reader who can open it
(issue 36): a link to a page that answers "Not open to you" is not offered."""

from __future__ import annotations

from dataclasses import replace

from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils.http import urlencode

from emailops.core.journal_row import JournalRow
from templates_admin import roles
from templates_admin.console import Refusal, attempt
from templates_admin.journal import selectors
from templates_admin.journal.address import AddressStates, address_states

__all__ = [
    "address_links",
    "address_url",
    "entry_url",
    "row_act_link",
    "search_states",
    "template_version_url",
    "with_row_urls",
]


def entry_url(admin_site, name: str, key: str) -> str:
    return reverse(f"{admin_site.name}:templates_admin_journal_{name}", args=[key])


def address_url(admin_site, address: str) -> str:
    """The address page ("" for a value that is no address, or no URL can carry)."""
    if not selectors.looks_like_email(address.strip()):
        return ""
    try:
        return reverse(f"{admin_site.name}:templates_admin_journal_address", args=[address.strip()])
    except NoReverseMatch:
        return ""


def address_links(request: HttpRequest, admin_site, address: str) -> dict[str, str]:
    """The places to act on ``address``'s states, those the reader may open."""
    held = reverse(f"{admin_site.name}:templates_admin_journal_held")
    links = {"held": held}
    page = address_url(admin_site, address)
    links["address"] = page
    if request.user.has_perm(roles.VIEW_SUPPRESSIONS):
        try:
            links["suppression"] = reverse(
                f"{admin_site.name}:templates_admin_suppression_detail", args=[address.strip()]
            )
        except NoReverseMatch:
            links["suppression"] = ""
        links["preferences"] = f"{page}#preferences-heading" if page else links["suppression"]
    return links


def with_row_urls(states: AddressStates, admin_site) -> AddressStates:
    """``states`` with each not-delivered row's page."""
    rows = [
        replace(n, url=entry_url(admin_site, "detail", n.row.key)) for n in states.not_delivered
    ]
    return replace(states, not_delivered=rows)


def search_states(request: HttpRequest, admin_site, result, *, first_page: bool):
    """What keeps email from the address searched for (held, not delivered, unsubscribed,
    suppressed), said before its rows; None for other searches and later pages."""
    if result is None or result.kind != selectors.SearchKind.RECIPIENT or not first_page:
        return None
    found = attempt(
        lambda: address_states(
            adapters=request.container,
            address=result.query,
            rows=result.rows,
            suppressions=request.user.has_perm(roles.VIEW_SUPPRESSIONS),
        ),
        unavailable="What keeps email from this address could not be read",
    )
    if isinstance(found, Refusal):
        return AddressStates(address=result.query, problems=[found.text])
    return with_row_urls(found, admin_site)


def template_version_url(request: HttpRequest, admin_site, row: JournalRow) -> str:
    """The template history page at the version this row was sent with ("" if unrecorded, or
    for a reader the history pages refuse: only what the reader can open is offered)."""
    key, version = row.template_key, row.template_version
    if not key or not version or not request.user.has_perm(roles.MANAGE_MAPPINGS):
        return ""
    try:
        history = reverse(f"{admin_site.name}:templates_admin_draft_history", kwargs={"key": key})
    except NoReverseMatch:  # the history pages are not mounted
        return ""
    return f"{history}?{urlencode({'new': version})}#version-{version}"


def row_act_link(request: HttpRequest, admin_site, row: JournalRow) -> tuple[str, str] | None:
    """Where to act on a log-only row's cause, when the reader may: (words, url) or None."""
    reason = row.logged_only_reason if row.logged_only else ""
    user = request.user
    try:
        if reason == "unsubscribed" and user.has_perm(roles.VIEW_SUPPRESSIONS):
            page = address_url(admin_site, row.recipient)
            return ("The address's preferences", f"{page}#preferences-heading") if page else None
        if reason in ("loop", "rate-safeguard") and user.has_perm(roles.RESEND_EMAIL):
            held = reverse(f"{admin_site.name}:templates_admin_journal_held")
            return "Release it (Held and log-only)", f"{held}?{urlencode({'reason': reason})}"
        if reason == "template-off" and user.has_perm(roles.MANAGE_MAPPINGS):
            mapping = reverse(
                f"{admin_site.name}:templates_admin_mapping_detail",
                kwargs={"message_id": row.message_id},
            )
            return "The template mapping (sending off)", mapping
    except NoReverseMatch:
        return None
    return None
