"""The console's login throttle: django-axes' locks, and a structured log line for each lockout
(docs/console.md, "Signing in").

Every rule compares usernames by ``throttle_key``: NFKC, stripped, case-folded, so admin2 in
fullwidth letters, " admin2 " and "ADMIN2" are all "admin2". That is the throttle's key only:
Django authenticates the name as typed. Addresses are ``emailops.security.client_ip``'s.

Locks (django-axes): ``AXES_FAILURE_LIMIT`` (5) failures within ``AXES_COOLOFF_TIME``
(15 minutes) lock, for 15 minutes after the last of them,

- one username from one address: that pair, never the username everywhere, so nobody can lock
  an administrator out by failing for them; the owner elsewhere still signs in;
- one address, whatever the usernames (password spraying): that address.

``manage.py axes_reset_username NAME`` lifts one early (NAME as ``throttle_key`` spells it).
"""

from __future__ import annotations

import logging
import unicodedata
from typing import Any

from axes.signals import user_locked_out
from django.conf import settings
from django.dispatch import receiver
from django.http import HttpRequest

from emailops.core.events import EventLog

logger = logging.getLogger("templates_admin.login")


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
