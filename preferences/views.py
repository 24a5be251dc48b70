"""``/u/<token>``: RFC 8058's one-click unsubscribe, and the small page a recipient opens.

- ``POST`` with ``List-Unsubscribe=One-Click`` (what a mailbox provider sends): unsubscribed at
  once, 200 and one line of text. No confirmation, no redirect, no JavaScript.
- ``GET``: the page. It changes nothing (link scanners open every link in a mail): it says what the
  address is unsubscribed from (with Undo) or offers to unsubscribe, and lists the address's other
  categories the store knows, with toggles.
- ``POST`` ``action=undo|unsubscribe|set``: the page's buttons; the page again, with what changed.

The encrypted token is the only credential: no login, no session, no CSRF token (see
``unsubscribe``), and no cookie on any response (``cookieless``). A bad token of any kind gets the
same plain 400, which names no address. Bad tokens are counted per client address, requests with
a good one per address (fixed one-minute windows in Redis); over a limit: 429.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils.crypto import salted_hmac
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from emailops.core.events import EventLog
from emailops.core.preferences import HowChanged, Preference, PreferenceStore
from emailops.redis.token_rate import RateLimitUnavailable, TokenRateLimiter
from emailops.security import client_ip
from emailops.unsubscribe import BadToken, ExpiredLegacyToken, UnsubscribeToken, read_link
from emailops.unsubscribes import record_unsubscribe
from preferences.labels import category_label
from preferences.middleware import cookieless

if TYPE_CHECKING:
    from emailops.aws.stats import BufferedStats

__all__ = ["unsubscribe"]

log = EventLog(logging.getLogger("emailops.preferences"))

# Nothing on these pages loads anything: no script, no font, no frame; forms post back here.
PAGE_POLICY = "; ".join(
    [
        "default-src 'none'",
        "style-src 'unsafe-inline'",
        "img-src 'self' data:",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
)
# A branding key: an organization id as the token or the query names it (a CSS class, no lookup).
_ORGANIZATION = re.compile(r"[A-Za-z0-9_-]{1,40}")


# csrf_exempt: the encrypted token in the URL is the credential, and it is unforgeable. A mailbox
# provider's one-click POST has no cookie and no CSRF token to send (RFC 8058), and the page's own
# forms need none either: a forged cross-site POST would have to know the token already, and
# whoever knows it may make these changes anyway (it is the link from the recipient's email).
@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
@cookieless
def unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    adapters = request.container
    limits, limiter = adapters.config.preferences, adapters.unsubscribe_rate_limiter
    client = client_ip(request)
    # Only bad tokens count against a client: mailbox providers post valid ones from a few
    # servers. One over its bad tokens is refused before any more is read (valid ones too), so
    # guessing stays bounded.
    if refused := _over_limit(limiter, "client", client, limits.rate_per_client, count=False):
        return refused
    try:
        link = read_link(token)
    except ExpiredLegacyToken:
        return _page("preferences/bad_link.html", {}, status=400)  # ours, only old: no guess
    except BadToken:
        refused = _over_limit(limiter, "client", client, limits.rate_per_client)
        return refused or _page("preferences/bad_link.html", {}, status=400)
    if refused := _over_limit(limiter, "address", link.address, limits.rate_per_address):
        return refused
    if adapters.tombstones.erased_at(link.address) is not None:
        # An erased recipient's old email: its preference lives under the tombstone's name,
        # where the consumers look it up; the address itself is never stored again.
        link = replace(link, address=adapters.tombstones.name(link.address))
    store: PreferenceStore = adapters.preference_store
    stats = adapters.stats  # where an unsubscribe is counted for the dashboard
    notice = ""
    if request.method == "POST":
        if request.POST.get("List-Unsubscribe") == "One-Click":
            _write(
                store,
                link.address,
                link.category,
                subscribed=False,
                how=HowChanged.ONE_CLICK,
                stats=stats,
            )
            text = _("You are unsubscribed from %(label)s.") % {
                "label": category_label(link.category)
            }
            return _plain(text + "\n")
        action = request.POST.get("action", "")
        if action == "undo":
            _write(
                store,
                link.address,
                link.category,
                subscribed=True,
                how=HowChanged.PAGE,
                stats=stats,
            )
            notice = _("Done: you are subscribed again.")
        elif action == "unsubscribe":
            _write(
                store,
                link.address,
                link.category,
                subscribed=False,
                how=HowChanged.PAGE,
                stats=stats,
            )
            notice = _("Done: you are unsubscribed.")
        elif action == "set":
            _set_others(store, link, set(request.POST.getlist("subscribed")), stats=stats)
            notice = _("Your choices are saved.")
        else:
            return _page("preferences/bad_request.html", {}, status=400)
    return _preference_page(request, store, link, token, notice)


def _preference_page(
    request: HttpRequest, store: PreferenceStore, link: UnsubscribeToken, token: str, notice: str
) -> HttpResponse:
    current = store.get(link.address, link.category)
    others = sorted(
        (p for p in store.of_address(link.address) if p.category != link.category),
        key=lambda p: (category_label(p.category).casefold(), p.category),
    )
    organization = link.organization or request.GET.get("org", "")
    context = {
        "action": request.get_full_path(),
        "label": category_label(link.category),
        "subscribed": current is None or current.subscribed,
        "address": _masked(link.address),
        "notice": notice,
        "others": [
            {"slug": p.category, "label": category_label(p.category), "subscribed": p.subscribed}
            for p in others
        ],
        "organization": organization if _ORGANIZATION.fullmatch(organization) else "",
    }
    return _page("preferences/page.html", context)


def _write(
    store: PreferenceStore,
    address: str,
    category: str,
    *,
    subscribed: bool,
    how: HowChanged,
    stats: BufferedStats | None,
) -> None:
    label = category_label(category)
    at = int(time.time())
    store.set(Preference(address, category, subscribed, how=how.value, at=at, label=label))
    log.info("preference.changed", category=category, subscribed=subscribed, how=how.value)
    if not subscribed:
        record_unsubscribe(category, stats=stats)  # the dashboard's unsubscribes per category


def _set_others(
    store: PreferenceStore,
    link: UnsubscribeToken,
    wanted: set[str],
    *,
    stats: BufferedStats | None,
) -> None:
    """The toggles: only categories the store already has for the address (a posted slug it does
    not have creates nothing), and only those whose state changes."""
    for preference in store.of_address(link.address):
        if preference.category == link.category:
            continue
        subscribed = preference.category in wanted
        if subscribed != preference.subscribed:
            _write(
                store,
                link.address,
                preference.category,
                subscribed=subscribed,
                how=HowChanged.PAGE,
                stats=stats,
            )


def _over_limit(
    limiter: TokenRateLimiter, kind: str, value: str, per_minute: int, *, count: bool = True
) -> HttpResponse | None:
    """The 429 when ``value`` (an address or a client address) is over its window, else None;
    this request counted unless ``count`` is False. Under a keyed hash: no address in Redis.
    Redis unreachable: let it through, and say so. An unsubscribe that fails for an outage is
    worse than an hour without a limit (each token only changes its own address's
    preferences)."""
    if per_minute <= 0:
        return None
    key = salted_hmac("emailops.unsubscribe.rate", f"{kind}:{value}").hexdigest()[:32]
    try:
        if count:
            decision = limiter.hit(f"{kind}:{key}", per_minute=per_minute)
        else:
            decision = limiter.check(f"{kind}:{key}", per_minute=per_minute)
    except RateLimitUnavailable:
        log.warning("unsubscribe.rate_limit_unavailable", limit=kind)
        return None
    if decision.allowed:
        return None
    response = _page("preferences/too_many.html", {}, status=429)
    response["Retry-After"] = str(decision.retry_after)
    return response


def _masked(address: str) -> str:
    """erin@example.com → e***@example.com: enough to recognise, not to read off a screen."""
    local, at, domain = address.rpartition("@")
    return f"{local[:1]}***{at}{domain}" if at else "***"


def _page(template: str, context: dict, *, status: int = 200) -> HttpResponse:
    # Rendered without the request: none of the console's context processors (its user, its
    # messages, its send-stop banner) run on a public page.
    return _private(HttpResponse(render_to_string(template, context), status=status))


def _plain(text: str) -> HttpResponse:
    return _private(HttpResponse(text, content_type="text/plain; charset=utf-8"))


def _private(response: HttpResponse) -> HttpResponse:
    response["Content-Security-Policy"] = PAGE_POLICY
    response["Cache-Control"] = "no-store"
    # The token is in the URL: never sent on as a Referer, never indexed.
    response["Referrer-Policy"] = "no-referrer"
    response["X-Robots-Tag"] = "noindex, nofollow"
    return response
