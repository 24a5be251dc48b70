"""The console's login throttle: django-axes' locks, a wait for a username under a distributed
guessing run, and a structured log line for each refusal (docs/console.md, "Signing in").

Every rule compares usernames by ``throttle_key``: NFKC, stripped, case-folded, so admin2 in
fullwidth letters, " admin2 " and "ADMIN2" are all "admin2". That is the throttle's key only: Django authenticates
the name as typed. Addresses are ``emailops.security.client_ip``'s.

1. Locks (django-axes): ``AXES_FAILURE_LIMIT`` (5) failures within ``AXES_COOLOFF_TIME``
   (15 minutes) lock, for 15 minutes after the last of them,

   - one username from one address: that pair, never the username everywhere, so nobody can lock
     an administrator out by failing for them; the owner elsewhere still signs in;
   - one address, whatever the usernames (password spraying): that address.

   ``manage.py axes_reset_username NAME`` lifts one early (NAME as ``throttle_key`` spells it).

2. The wait (``LoginWaitMiddleware``), for a username guessed from many addresses: once it has
   ``WAIT_AFTER`` (5) or more failures within the cool-off, counted over all addresses, an address
   that has itself failed for it within the cool-off, and has never signed in as it, waits before
   its next attempt for it: ``WAIT_BASE`` (30 s), doubled for each failure of the username past
   the fifth, at most the cool-off (30 s, 1 min, 2 min, ... 15 min), from that address's last
   failure. An attempt inside the wait is answered 429 with ``Retry-After``, without checking
   the password and without counting as a failure (unless a lock of rule 1 applies too: then
   django-axes answers, as it always does).

   Never made to wait: an address with no failure for the username (so the owner's correct
   password from a fresh address always gets in), and one it has signed in from before (axes'
   access log: the owner's usual address, typos included, pays nothing). A run from many
   addresses therefore gets one guess per address, then one per wait, rather than four quick
   ones per address before the lock.
"""

from __future__ import annotations

import logging
import math
import unicodedata
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from axes.handlers.proxy import AxesProxyHandler
from axes.models import AccessAttempt, AccessLog
from axes.signals import user_locked_out
from django.conf import settings
from django.db.models import Max, Sum
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from emailops.core.events import EventLog
from emailops.security import client_ip

logger = logging.getLogger("templates_admin.login")

WAIT_AFTER = 5  # failures of one username, over all addresses, before failing addresses wait
WAIT_BASE = timedelta(seconds=30)


def throttle_key(username: str | None) -> str | None:
    """The username as the throttle counts it: NFKC, stripped, case-folded (and NFKC again, as
    case folding can leave a string that is not in NFKC)."""
    if username is None:
        return None
    folded = unicodedata.normalize("NFKC", username).strip().casefold()
    return unicodedata.normalize("NFKC", folded)


def throttle_username(request: HttpRequest, credentials: dict | None) -> str | None:
    """AXES_USERNAME_CALLABLE: where django-axes looks for the username (the credentials, else
    the posted form), as ``throttle_key`` spells it."""
    field = settings.AXES_USERNAME_FORM_FIELD
    if credentials:
        return throttle_key(credentials.get(field))
    return throttle_key(getattr(request, "data", request.POST).get(field))


def _signed_in_before(key: str, ip: str) -> bool:
    names = AccessLog.objects.filter(ip_address=ip).values_list("username", flat=True).distinct()
    return any(throttle_key(name) == key for name in names)


def seconds_to_wait(username: str | None, ip: str) -> int:
    """How long this address must still wait before trying this username (rule 2 above); 0: it
    may try now."""
    key = throttle_key(username)
    if not key or not ip:
        return 0
    cooloff = settings.AXES_COOLOFF_TIME
    now = timezone.now()
    recent = AccessAttempt.objects.filter(username=key, attempt_time__gte=now - cooloff)
    failures = recent.aggregate(n=Sum("failures_since_start"))["n"] or 0
    if failures < WAIT_AFTER:
        return 0
    last = recent.filter(ip_address=ip).aggregate(last=Max("attempt_time"))["last"]
    if last is None or _signed_in_before(key, ip):
        return 0
    wait = min(WAIT_BASE * 2 ** min(failures - WAIT_AFTER, 32), cooloff)
    remaining = (last + wait - now).total_seconds()
    return math.ceil(remaining) if remaining > 0 else 0


def _wait_text(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} seconds"
    return f"{math.ceil(seconds / 60)} minutes"


class LoginWaitMiddleware:
    """Refuses a sign-in inside its wait (rule 2 above) before the login view, so the password is
    not checked and the refusal is no failure of its own."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method == "POST" and request.path == reverse("admin:login"):
            username = request.POST.get(settings.AXES_USERNAME_FORM_FIELD)
            ip = client_ip(request)
            wait = seconds_to_wait(username, ip)
            # Locked by django-axes (rule 1) as well: its answer, and its count, stand.
            if wait and not AxesProxyHandler.is_locked(
                request, {settings.AXES_USERNAME_FORM_FIELD: username}
            ):
                EventLog(logger).warning(
                    "login.wait",
                    username=throttle_key(username) or "",
                    ip=ip,
                    seconds=wait,
                    path=request.path,
                )
                response = render(
                    request,
                    settings.AXES_LOCKOUT_TEMPLATE,
                    {"wait": _wait_text(wait)},
                    status=429,
                )
                response["Retry-After"] = str(wait)
                return response
        return self.get_response(request)


@receiver(user_locked_out, dispatch_uid="templates_admin.login_locked_out")
def log_lockout(sender: Any, request: Any, username: str | None, ip_address: str | None, **_):
    """Each lockout as a structured event, so an alert can follow a password-guessing run and an
    administrator knows whom to unlock."""
    EventLog(logger).warning(
        "login.locked_out",
        username=username or "",
        ip=ip_address or "",
        path=getattr(request, "path", ""),
    )
