"""Endpoint secrets sealed at rest: the database holds each ``whsec_`` secret (and the previous
one, during a rotation's overlap) as a Fernet token (AES-128-CBC + HMAC-SHA256), under the keys
``WebhooksConfig.secret_keys`` names (WEBHOOK_SECRET_KEYS, else derived from DJANGO_SECRET_KEY):
the first seals, every one opens (MultiFernet), so a key can be rotated. A database dump alone
holds no secret that signs. The plain secret exists only in memory: shown once when made, and
opened for each signature."""

from __future__ import annotations

from collections.abc import Sequence

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from emailops.core.errors import PermanentError

__all__ = ["SecretUnreadable", "resealed", "seal", "sealed", "unseal"]

_PLAIN_PREFIX = "whsec_"  # a secret stored before they were sealed (the migration seals them)


class SecretUnreadable(PermanentError):
    """A sealed secret no configured key opens (a key dropped from WEBHOOK_SECRET_KEYS too soon,
    or DJANGO_SECRET_KEY changed without its fallback)."""


def _box(keys: Sequence[str]) -> MultiFernet:
    if not keys:
        raise SecretUnreadable("open a webhook secret", reason="no key (WEBHOOK_SECRET_KEYS)")
    return MultiFernet([Fernet(key) for key in keys])


def sealed(value: str) -> bool:
    """Whether a stored value is a sealed secret (not one kept in clear, nor empty)."""
    return bool(value) and not value.startswith(_PLAIN_PREFIX)


def seal(secret: str, *, keys: Sequence[str]) -> str:
    return _box(keys).encrypt(secret.encode()).decode()


def unseal(stored: str, *, keys: Sequence[str]) -> str:
    """The secret; SecretUnreadable when no key opens it."""
    try:
        return _box(keys).decrypt(stored.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable(
            "open a webhook secret",
            reason="no key in WEBHOOK_SECRET_KEYS (nor one derived from DJANGO_SECRET_KEY or its "
            "fallbacks) opens it",
        ) from None


def resealed(stored: str, *, keys: Sequence[str]) -> str:
    """The same secret sealed under the first key (a rotation of WEBHOOK_SECRET_KEYS)."""
    try:
        return _box(keys).rotate(stored.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable(
            "reseal a webhook secret", reason="no configured key opens it"
        ) from None
