"""Writes: producer tokens (create, revoke, authenticate), and their journal reads audited."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.base_user import AbstractBaseUser
from django.utils import timezone

from api.models import ApiToken
from audit.models import JournalReadAudit
from audit.reads import read_record

__all__ = [
    "NewToken",
    "api_token_authenticate",
    "api_token_create",
    "api_token_issue",
    "api_token_revoke",
    "journal_read_by_token",
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
    *, name: str, emails_per_minute: int = 60, user: AbstractBaseUser | None = None
) -> NewToken:
    token = ApiToken(name=name, emails_per_minute=emails_per_minute)
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


def journal_read_by_token(*, token: ApiToken, action: str, queries: list[str]) -> None:
    """The API audits its journal reads in the console's trail, as every reader does: one entry
    per row asked for or handed back (its Id names the recipient, so erasure finds it)."""
    for query in queries:
        read_record(
            channel=JournalReadAudit.Channel.API,
            action=action,
            query=query,
            actor=f"token {token.name} ({token.prefix}…)",
            token_prefix=token.prefix,
        )
