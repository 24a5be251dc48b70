"""Log each lockout of the login throttle (django-axes) as a structured event, so an alert can
follow a password-guessing run and an administrator knows whom to unlock
(``manage.py axes_reset_username NAME``)."""

from __future__ import annotations

import logging
from typing import Any

from axes.signals import user_locked_out
from django.dispatch import receiver

from emailops.core.events import EventLog

logger = logging.getLogger("templates_admin.login")


@receiver(user_locked_out, dispatch_uid="templates_admin.login_locked_out")
def log_lockout(sender: Any, request: Any, username: str | None, ip_address: str | None, **_):
    EventLog(logger).warning(
        "login.locked_out",
        username=username or "",
        ip=ip_address or "",
        path=getattr(request, "path", ""),
    )
