"""Signed unsubscribe tokens and the links built on them (the ``UnsubscribeLinks`` port).

A token is the (address, category[, organization]) it unsubscribes, signed with Django's signing
under a salt of its own: no database row, nothing to look up to verify it, unique per recipient
(the address is in it, as ``address_key`` spells it). It carries no timestamp and never expires:
the link must work for as long as the email is kept. Rotating ``DJANGO_SECRET_KEY`` keeps the old
links working while the old key is in ``DJANGO_SECRET_KEY_FALLBACKS`` (Django's Signer verifies
against each).

Here, not in emailops.core: it uses Django. The public page that reads the tokens is the
``preferences`` app (``/u/<token>``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.core import signing

from emailops.core.contract import address_key

if TYPE_CHECKING:
    from emailops.config import Config

__all__ = [
    "SALT",
    "BadToken",
    "SignedUnsubscribeLinks",
    "UnsubscribeToken",
    "read_link",
    "read_token",
    "unsubscribe_links_from_config",
    "unsubscribe_token",
]

# Ours alone: a value Django or another feature signed with the same key is no unsubscribe token.
SALT = "emailops.unsubscribe.v1"
PATH = "/u/"


class BadToken(Exception):
    """Not a token of ours: tampered, truncated, signed under a retired key, or another purpose's."""


@dataclass(frozen=True)
class UnsubscribeToken:
    address: str  # the address_key
    category: str
    organization: str = ""  # "" = none named (neutral branding)


def _signer() -> signing.Signer:
    # Built per call: it reads SECRET_KEY and SECRET_KEY_FALLBACKS as they are now.
    return signing.Signer(salt=SALT)


def unsubscribe_token(address: str, category: str, organization: str | None = None) -> str:
    """The signed token for (address, category): a compressed short list, no timestamp."""
    if not category:
        raise ValueError("an unsubscribe token needs a category (uncategorised mail has none)")
    payload = [address_key(address), category]
    if organization:
        payload.append(str(organization))
    return _signer().sign_object(payload, compress=True)


def read_link(token: str) -> UnsubscribeToken:
    """What ``token`` unsubscribes; BadToken unless we signed it (under the key or a fallback)."""
    try:
        payload = _signer().unsign_object(token)
    except (signing.BadSignature, ValueError, UnicodeError) as exc:
        raise BadToken(str(exc)) from None
    if (
        not isinstance(payload, list)
        or len(payload) not in (2, 3)
        or not all(isinstance(part, str) and part for part in payload)
    ):
        raise BadToken("not an unsubscribe token's payload")
    return UnsubscribeToken(*payload)


def read_token(token: str) -> tuple[str, str]:
    """(address_key, category) of a token of ours; BadToken otherwise."""
    link = read_link(token)
    return link.address, link.category


class SignedUnsubscribeLinks:
    """The ``UnsubscribeLinks`` port: ``{base_url}/u/{token}``, or None without a base URL."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")

    def url(self, *, address: str, category: str, organization: str | None) -> str | None:
        if not self.base_url or not category:
            return None
        return f"{self.base_url}{PATH}{unsubscribe_token(address, category, organization)}"


def unsubscribe_links_from_config(config: Config | None = None) -> SignedUnsubscribeLinks:
    """The links the container hands the pipeline, on PUBLIC_BASE_URL (the current settings'
    when no ``config`` is given)."""
    if config is None:
        from emailops.config import Config

        config = Config.from_settings()
    return SignedUnsubscribeLinks(config.preferences.public_base_url)
