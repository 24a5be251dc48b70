"""Encrypted unsubscribe tokens and the links built on them (the ``UnsubscribeLinks`` port).

A token is the (address, category[, organization]) it unsubscribes, encrypted with AES-SIV under
a key derived (HKDF-SHA256, a purpose of its own) from ``DJANGO_SECRET_KEY``: nobody who sees the
URL (an access log, a proxy, a forwarded email) can read the address in it, and nobody without
the key can make or alter one (SIV authenticates). No database row, nothing to look up. AES-SIV
is deterministic, so a recipient's token for a category is the same in every email (as the signed
ones were) and there is no nonce to repeat. It carries no timestamp and never expires
(docs/unsubscribe.md says why). Rotating ``DJANGO_SECRET_KEY`` keeps old links working while
the old key is in ``DJANGO_SECRET_KEY_FALLBACKS``: each key is tried.

Until ``LEGACY_ACCEPTED_UNTIL`` the signed tokens of before (``emailops.unsubscribe.v1``, whose
payload is readable) are still read, so links in emails already sent keep working.

Here, not in emailops.core: it uses Django's settings. The public page that reads the tokens is
the ``preferences`` app (``/u/<token>``).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESSIV
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.core import signing

from emailops.core.contract import address_key

if TYPE_CHECKING:
    from emailops.config import Config

__all__ = [
    "LEGACY_ACCEPTED_UNTIL",
    "LEGACY_SALT",
    "PURPOSE",
    "BadToken",
    "EncryptedUnsubscribeLinks",
    "ExpiredLegacyToken",
    "UnsubscribeToken",
    "read_link",
    "read_token",
    "unsubscribe_links_from_config",
    "unsubscribe_token",
]

# Ours alone: the key derived for it, and the associated data every token is sealed with.
PURPOSE = b"emailops.unsubscribe.v2"
# The signed tokens of before (readable payload): read until this moment, then a 400 like any
# bad token. About six months after the release that stopped making them (docs/unsubscribe.md).
LEGACY_SALT = "emailops.unsubscribe.v1"
LEGACY_ACCEPTED_UNTIL = datetime(2027, 6, 30, tzinfo=UTC).timestamp()
PATH = "/u/"
# A URL path segment longer than this is no token of ours: refused before any decoding.
MAX_TOKEN_LENGTH = 600
_ALPHABET = re.compile(r"[A-Za-z0-9_-]+")


class BadToken(Exception):
    """Not a token of ours: tampered, truncated, under a retired key, another purpose's, or a
    signed one past LEGACY_ACCEPTED_UNTIL."""


class ExpiredLegacyToken(BadToken):
    """A signed token we did make, read after LEGACY_ACCEPTED_UNTIL: not a guess (the page does
    not count it against the client)."""


@dataclass(frozen=True)
class UnsubscribeToken:
    address: str  # the address_key
    category: str
    organization: str = ""  # "" = none named (neutral branding)


@lru_cache(maxsize=8)
def _cipher(secret: str) -> AESSIV:
    # 64 bytes: AES-256-SIV. Cached per key: the pipeline makes a token per categorised email.
    key = HKDF(algorithm=hashes.SHA256(), length=64, salt=None, info=PURPOSE).derive(
        secret.encode()
    )
    return AESSIV(key)


def _keys() -> list[str]:
    # Read per call: SECRET_KEY and SECRET_KEY_FALLBACKS as they are now.
    return [settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS]


def unsubscribe_token(address: str, category: str, organization: str | None = None) -> str:
    """The encrypted token for (address, category): URL-safe base64, no padding, no timestamp."""
    if not category:
        raise ValueError("an unsubscribe token needs a category (uncategorised mail has none)")
    payload = [address_key(address), category]
    if organization:
        payload.append(str(organization))
    plain = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
    sealed = _cipher(settings.SECRET_KEY).encrypt(plain, [PURPOSE])
    return base64.urlsafe_b64encode(sealed).rstrip(b"=").decode("ascii")


def read_link(token: str, *, now: float | None = None) -> UnsubscribeToken:
    """What ``token`` unsubscribes; BadToken unless we made it (under the key or a fallback)."""
    if not token or len(token) > MAX_TOKEN_LENGTH:
        raise BadToken("no token, or too long for one")
    if ":" in token:  # the signed form's separator; never in URL-safe base64
        payload = _read_legacy(token, time.time() if now is None else now)
    else:
        payload = _read_sealed(token)
    if (
        not isinstance(payload, list)
        or len(payload) not in (2, 3)
        or not all(isinstance(part, str) and part for part in payload)
    ):
        raise BadToken("not an unsubscribe token's payload")
    return UnsubscribeToken(*payload)


def _read_sealed(token: str) -> object:
    # Only URL-safe base64's alphabet: the decoder would skip other characters (one token, one URL)
    if not _ALPHABET.fullmatch(token):
        raise BadToken("not URL-safe base64")
    try:
        sealed = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        raise BadToken("not base64") from None
    for secret in _keys():
        try:
            plain = _cipher(secret).decrypt(sealed, [PURPOSE])
        except (InvalidTag, ValueError):  # ValueError: shorter than the SIV itself
            continue
        try:
            return json.loads(plain)
        except ValueError:
            raise BadToken("not an unsubscribe token's payload") from None
    raise BadToken("sealed under no key we keep")


def _read_legacy(token: str, now: float) -> object:
    try:
        payload = signing.Signer(salt=LEGACY_SALT).unsign_object(token)
    except (signing.BadSignature, ValueError, UnicodeError) as exc:
        raise BadToken(str(exc)) from None
    if now >= LEGACY_ACCEPTED_UNTIL:
        raise ExpiredLegacyToken("a signed token, past LEGACY_ACCEPTED_UNTIL")
    return payload


def read_token(token: str) -> tuple[str, str]:
    """(address_key, category) of a token of ours; BadToken otherwise."""
    link = read_link(token)
    return link.address, link.category


class EncryptedUnsubscribeLinks:
    """The ``UnsubscribeLinks`` port: ``{base_url}/u/{token}``, or None without a base URL."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")

    def url(self, *, address: str, category: str, organization: str | None) -> str | None:
        if not self.base_url or not category:
            return None
        return f"{self.base_url}{PATH}{unsubscribe_token(address, category, organization)}"


def unsubscribe_links_from_config(config: Config | None = None) -> EncryptedUnsubscribeLinks:
    """The links the container hands the pipeline, on PUBLIC_BASE_URL (the current settings'
    when no ``config`` is given)."""
    if config is None:
        from emailops.config import Config

        config = Config.from_settings()
    return EncryptedUnsubscribeLinks(config.preferences.public_base_url)
