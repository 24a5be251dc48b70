"""Writes: producer tokens (create, revoke, authenticate) and the journal-read audit trail."""

from __future__ import annotations

import getpass
import hashlib
import os
import secrets
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest
from django.utils import timezone

from api.models import ApiToken, JournalReadAudit

__all__ = [
    "NewToken",
    "api_token_authenticate",
    "api_token_create",
    "api_token_issue",
    "api_token_revoke",
    "journal_read_by_console",
    "journal_read_record",
    "token_hash",
]

TOKEN_PREFIX = "eo_"
_SHOWN = 8  # characters of the secret kept as the token's visible prefix
# last_used_at is a hint for humans; writing it on every request would cost a write per call.
_LAST_USED_PRECISION = timedelta(minutes=1)


def token_hash(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode()).hexdigest()


@dataclass(frozen=True)
class NewToken:
    token: ApiToken
    plaintext: str  # shown once, never stored


def api_token_issue(*, token: ApiToken, user: AbstractBaseUser | None = None) -> str:
    """Give an unsaved ``token`` (name and limit set) its secret, save it, return the plaintext.
    Only the SHA-256 is stored: the plaintext is shown once, by the caller."""
    plaintext = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token.prefix = plaintext[: len(TOKEN_PREFIX) + _SHOWN]
    token.token_hash = token_hash(plaintext)
    token.created_by = user
    token.save()
    return plaintext


def api_token_create(
    *, name: str, requests_per_minute: int = 60, user: AbstractBaseUser | None = None
) -> NewToken:
    token = ApiToken(name=name, requests_per_minute=requests_per_minute)
    return NewToken(token=token, plaintext=api_token_issue(token=token, user=user))


def api_token_revoke(*, token: ApiToken) -> bool:
    """Revoke at once; False when it already was (its revocation time is kept)."""
    revoked = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    token.refresh_from_db(fields=["revoked_at"])
    return bool(revoked)


def api_token_authenticate(plaintext: str) -> ApiToken | None:
    """The active token with this plaintext, or None. Lookup is by hash (the secret has 256 bits
    of entropy, so a plain SHA-256 suffices and no per-token salt is needed)."""
    if not plaintext.startswith(TOKEN_PREFIX):
        return None
    token = ApiToken.objects.filter(
        token_hash=token_hash(plaintext), revoked_at__isnull=True
    ).first()
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= _LAST_USED_PRECISION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


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


def journal_read_record(
    *,
    channel: JournalReadAudit.Channel,
    action: str,
    query: str,
    user: AbstractBaseUser | AnonymousUser | None = None,
    token: ApiToken | None = None,
    filters: dict[str, Any] | None = None,
) -> JournalReadAudit:
    """Audit one read of the journal. The actor is the console user, the API token, or (for the
    command line, where there is no Django user) the OS user running it. ``filters`` may be a
    search's keyword arguments: empty ones, ``query`` and ``cursor`` are left out."""
    if token is not None:
        actor = f"token {token.name} ({token.prefix}…)"
    elif user is not None and user.is_authenticated:
        actor = user.get_username()
    else:
        actor = f"os:{_os_user()}"
    return JournalReadAudit.objects.create(
        channel=channel,
        action=action,
        query=query[:500],
        actor=actor[:200],
        user=user if user is not None and user.is_authenticated else None,
        token=token,
        filters={
            k: _plain(v)
            for k, v in (filters or {}).items()
            if k not in _NOT_FILTERS and v not in (None, "", False)
        },
    )


def journal_read_by_console(
    request: HttpRequest, action: str, query: str, filters: dict[str, Any] | None = None
) -> JournalReadAudit:
    """The console's journal pages audit each read with this one call."""
    return journal_read_record(
        channel=JournalReadAudit.Channel.CONSOLE,
        action=action,
        query=query,
        user=request.user,
        filters=filters,
    )
