"""The address page: one place per address with what keeps email from it, its recent sends, its
suppression and its preferences with their history (issue 36). Thin: permission, one selector,
render; acting (removing a suppression, re-subscribing, releasing) stays on the pages that do it,
linked from here."""

from __future__ import annotations

import time

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.http import urlencode

from audit.reads import read_by_console, read_counted
from templates_admin import roles
from templates_admin.console import Refusal, attempt, console_view
from templates_admin.journal import links, presentation, selectors
from templates_admin.journal.address import RECENT_SENDS, address_overview
from templates_admin.journal.views import AREA


@console_view(roles.SEARCH_JOURNAL)
def address(request: HttpRequest, admin_site, address: str) -> HttpResponse:
    address = address.strip()
    suppressions = request.user.has_perm(roles.VIEW_SUPPRESSIONS)
    read = read_by_console(request, "address", address)
    found = attempt(
        lambda: address_overview(
            adapters=request.container, address=address, suppressions=suppressions
        ),
        unavailable="The journal could not be read",
        also={selectors.JournalSearchError: str},
    )
    search = reverse(f"{admin_site.name}:templates_admin_emailjournalpage_changelist")
    context = {
        "title": address,
        "address": address,
        "journal_url": f"{search}?{urlencode({'q': address})}",
        "links": links.address_links(request, admin_site, address),
        "can_release": request.user.has_perm(roles.RESEND_EMAIL),
        "can_remove": request.user.has_perm(roles.REMOVE_SUPPRESSION),
        "recent": RECENT_SENDS,
    }
    if isinstance(found, Refusal):
        context["error"] = found.text
        return AREA.page(request, admin_site, "address.html", context, status=found.status)
    read_counted(audit=read, rows=len(found.sends.rows))
    now = int(time.time())
    lease = request.container.lease_policy
    context |= {
        "states": links.with_row_urls(found.states, admin_site),
        "sends": [
            (
                presentation.summarize(row, now=now, lease=lease),
                links.entry_url(admin_site, "detail", row.key),
            )
            for row in found.sends.rows
        ],
        "more_sends": bool(found.sends.next_cursor),
        "preferences": found.preferences,
        "suppressions": suppressions,
    }
    return AREA.page(request, admin_site, "address.html", context)
