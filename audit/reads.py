"""The trail of reads of personal data (``JournalReadAudit``): who read which rows, addresses or
contexts, through which door (console, ``email_log`` and other commands, the API). Shared: every
area that shows a recipient records here (the journal, the drafts' replay, the dead-letter page,
the suppression list), and so do the commands and the API."""

from __future__ import annotations

import getpass
import os
from datetime import date, datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import HttpRequest

from audit.models import JournalReadAudit

__all__ = ["read_by_console", "read_counted", "read_record"]


# A search's own arguments that are not filters: the query has its own column, and a page cursor
# is an opaque signed blob.
_NOT_FILTERS = {"query", "cursor"}


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a container user without a passwd entry
        return f"uid {os.getuid()}"


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, date | datetime) else value


def read_record(
    *,
    channel: JournalReadAudit.Channel,
    action: str,
    query: str,
    user: AbstractBaseUser | AnonymousUser | None = None,
    actor: str = "",
    token_prefix: str = "",
    filters: dict[str, Any] | None = None,
    rows: int | None = None,
) -> JournalReadAudit:
    """Audit one read of the journal. The actor is ``actor`` when the reader names itself (an API
    token), else the console user, else (the command line, with no Django user) the OS user
    running it. ``filters`` may be a search's keyword arguments: empty ones, ``query`` and
    ``cursor`` are left out."""
    signed_in = user is not None and user.is_authenticated
    if not actor:
        actor = user.get_username() if signed_in else f"os:{_os_user()}"
    return JournalReadAudit.objects.create(
        channel=channel,
        action=action,
        query=query[:500],
        actor=actor[:200],
        user=user if signed_in else None,
        token_prefix=token_prefix,
        rows=rows,
        filters={
            k: _plain(v)
            for k, v in (filters or {}).items()
            if k not in _NOT_FILTERS and v not in (None, "", False)
        },
    )


def read_by_console(
    request: HttpRequest,
    action: str,
    query: str,
    filters: dict[str, Any] | None = None,
    rows: int | None = None,
) -> JournalReadAudit:
    """The console's pages audit each read of personal data with this one call."""
    return read_record(
        channel=JournalReadAudit.Channel.CONSOLE,
        action=action,
        query=query,
        user=request.user,
        filters=filters,
        rows=rows,
    )


def read_counted(*, audit: JournalReadAudit, rows: int) -> None:
    """Record how many rows a read (a CSV export, known only once streamed) handed over."""
    JournalReadAudit.objects.filter(pk=audit.pk).update(rows=rows)
    audit.rows = rows
