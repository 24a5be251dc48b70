"""The "held and log-only" page: what the send guard kept back, and a Support lead's release of
selected log-only rows (``release.logged_only_release``). Thin: permission, selector, service."""

from __future__ import annotations

from dataclasses import asdict

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from audit.reads import read_by_console
from emailops.core.erasure import masked_address
from emailops.core.journal_words import logged_only_cause
from templates_admin import roles
from templates_admin.console import Refusal, attempt, console_view
from templates_admin.display import local_text, utc_text
from templates_admin.journal.held import REASONS, guard_view
from templates_admin.journal.links import entry_url
from templates_admin.journal.release import RELEASABLE, logged_only_release
from templates_admin.journal.views import AREA


@console_view(roles.SEARCH_JOURNAL)
def held(request: HttpRequest, admin_site) -> HttpResponse:
    here = reverse(f"{admin_site.name}:templates_admin_journal_held")
    error, status = "", 200
    if request.method == "POST":
        if not request.user.has_perm(roles.RESEND_EMAIL):
            return HttpResponse("releasing needs the resend_email permission", status=403)
        keys = request.POST.getlist("key")
        why = request.POST.get("reason", "")
        done, refusals = 0, []
        for key in keys:
            result = attempt(
                lambda key=key: logged_only_release(
                    adapters=request.container, key=key, reason=why, user=request.user
                ),
                unavailable="The release could not be queued",
            )
            if isinstance(result, Refusal):
                refusals.append(f"{key[:16]}…: {result.text}")
            else:
                done += 1
        if done:
            messages.success(request, f"Released {done} request(s): queued to be sent.")
        if not refusals and keys:
            return HttpResponseRedirect(f"{here}?{request.GET.urlencode()}")
        error = "; ".join(refusals) or "select at least one row to release"
        status = 400
    found = attempt(
        lambda: guard_view(adapters=request.container, reason=request.GET.get("reason", "")),
        unavailable="The journal could not be read",
    )
    if isinstance(found, Refusal):
        return AREA.page(
            request,
            admin_site,
            "held.html",
            {"title": "Held and log-only", "error": found.text},
            status=found.status,
        )
    if found.logged_only:  # journal rows: each names its recipient
        read_by_console(
            request, "held", found.reason, {"reason": found.reason}, rows=len(found.logged_only)
        )
    held_rows = [
        {
            **asdict(h),
            "since": local_text(h.first_held_at),
            "since_utc": utc_text(h.first_held_at),
            "until": local_text(h.held_until),
        }
        for h in found.held
    ]
    logged_rows = [
        {
            "row": row,
            "recipient": masked_address(row.recipient) if row.recipient else "",
            "cause": logged_only_cause(row) or "reason unknown (a Go row)",
            "since": local_text(row.timestamp),
            "since_utc": utc_text(row.timestamp),
            "url": entry_url(admin_site, "detail", row.key),
        }
        for row in found.logged_only
    ]
    return AREA.page(
        request,
        admin_site,
        "held.html",
        {
            "title": "Held and log-only",
            "held": held_rows,
            "rows": logged_rows,
            "reason": found.reason,
            "reasons": REASONS,
            "releasable": RELEASABLE,
            "complete": found.complete,
            "can_release": request.user.has_perm(roles.RESEND_EMAIL),
            "error": error,
        },
        status=status,
    )
