"""Delivering a webhook, the pure rules: what an endpoint wants (``WebhookFilter``), which failures
are retried and when (exponential back-off with jitter, for about three days), the secrets and
the Standard Webhooks signature, the body's one serialisation, and the destination (SSRF) check.
The HTTP client and the resolver are passed in."""

from __future__ import annotations

import base64
import ipaddress
import json
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from standardwebhooks.webhooks import Webhook

from emailops.core.errors import PermanentError
from emailops.core.journal_row import JournalRow

__all__ = [
    "RETRY_WINDOW_SECONDS",
    "WebhookFilter",
    "WebhookRefused",
    "body_of",
    "check_destination",
    "new_secret",
    "retry_delay",
    "retryable",
    "sign",
    "url_without_userinfo",
]


class WebhookRefused(PermanentError):
    """An endpoint URL we will not post to (scheme, or where its host resolves)."""


# Delivery: retried on these, with exponential back-off and jitter, for about three days. The
# base is WEBHOOK_RETRY_BASE_SECONDS (this is its default), so a test or a staging stack can
# shorten the schedule; the cap and the window stay.
RETRY_BASE_SECONDS = 30
RETRY_CAP_SECONDS = 6 * 3600
RETRY_WINDOW_SECONDS = 3 * 86400


@dataclass(frozen=True)
class WebhookFilter:
    """What one endpoint wants. Empty means any; ``producer`` is the row's producer (an API
    token's namespace, or "" for the queue), and a token's endpoint always carries its own."""

    event_types: frozenset[str] = frozenset()
    message_ids: frozenset[str] = frozenset()
    organization: str = ""
    producer: str | None = None

    def matches(self, event_type: str, row: JournalRow | None, organization: str | None) -> bool:
        if self.event_types and event_type not in self.event_types:
            return False
        if self.message_ids and (row is None or row.message_id not in self.message_ids):
            return False
        if self.organization and organization != self.organization:
            return False
        return self.producer is None or (row is not None and row.producer == self.producer)


def retryable(status: int | None) -> bool:
    """A timeout or connection failure (None), 429 or a 5xx is worth another attempt."""
    return status is None or status == 429 or status >= 500


def retry_delay(
    attempt: int, *, random: Callable[[], float], base: float = RETRY_BASE_SECONDS
) -> float:
    """Seconds before attempt ``attempt + 1``: exponential from ``base``, capped, with full
    jitter in its upper half (so a burst of failures does not come back all at once)."""
    ceiling = min(RETRY_CAP_SECONDS, base * 2 ** max(attempt - 1, 0))
    return ceiling / 2 + random() * ceiling / 2


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def sign(event_id: str, timestamp: datetime, body: str, secrets_: Iterable[str]) -> dict[str, str]:
    """Standard Webhooks headers; several secrets (a rotation's overlap) sign side by side."""
    signatures = " ".join(Webhook(s).sign(event_id, timestamp, body) for s in secrets_)
    return {
        "webhook-id": event_id,
        "webhook-timestamp": str(int(timestamp.timestamp())),
        "webhook-signature": signatures,
        "content-type": "application/json",
    }


def body_of(data: Mapping[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"), sort_keys=True)


Resolver = Callable[[str, int], list[str]]

# Not globally routable although Python's is_global (3.11) may say so, or worth naming anyway:
# carrier-grade NAT (often a cloud's own internal range), IETF protocol assignments, benchmarking,
# the old class E.
_NOT_PUBLIC = tuple(
    ipaddress.ip_network(n)
    for n in ("100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "240.0.0.0/4")
)


_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An IPv6 address that carries an IPv4 one (IPv4-mapped ``::ffff:100.64.0.1``, NAT64
    ``64:ff9b::/96``, 6to4 ``2002::/16``) is judged as that IPv4 address."""
    address = ipaddress.ip_address(text.split("%")[0])
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if address.sixtofour is not None:
            return address.sixtofour
    return address


def _loopback(text: str) -> bool:
    return _address(text).is_loopback


def _refusal(text: str, *, allow_loopback: bool) -> str:
    """Why an address is not one to post to ("" when it is): only a globally routable unicast
    address, loopback where allowed."""
    address = _address(text)
    if address.is_loopback:
        return "" if allow_loopback else f"{text} is loopback"
    if address.is_multicast:
        return f"{text} is a multicast address"
    if not address.is_global or any(address in network for network in _NOT_PUBLIC):
        return f"{text} is a private address (not globally routable)"
    return ""


USERINFO_REFUSED = (
    "a URL with user information (user:password@) is refused: it would travel in the Host "
    "header and show in logs and pages. The signature authenticates us; put any token of the "
    "receiver's in the path"
)


def url_without_userinfo(url: str) -> str:
    """The URL as it may be named in an error: its user information (a password) left out."""
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def check_destination(
    url: str, *, resolve: Resolver, allow_loopback: bool, require_https: bool
) -> list[str]:
    """The addresses ``url``'s host resolves to, or WebhookRefused: a scheme other than https
    (http only where allowed), user information in the URL, or any address that is not globally
    routable unicast (private, shared, reserved, link-local, multicast, their IPv4-mapped IPv6
    forms; loopback unless allowed). Checked at creation and again before every attempt."""
    parts = urlsplit(url)
    if "@" in parts.netloc:
        raise WebhookRefused(
            "check webhook URL",
            key=url_without_userinfo(url),
            reason=USERINFO_REFUSED,
        )
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookRefused("check webhook URL", key=url, reason="not an http(s) URL")
    if parts.scheme == "http" and require_https:
        raise WebhookRefused("check webhook URL", key=url, reason="HTTPS is required")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        addresses = resolve(parts.hostname, port)
    except OSError as exc:
        raise WebhookRefused(
            "check webhook URL", key=url, reason=f"does not resolve: {exc}"
        ) from None
    if not addresses:
        raise WebhookRefused("check webhook URL", key=url, reason="does not resolve")
    for text in addresses:
        if reason := _refusal(text, allow_loopback=allow_loopback):
            raise WebhookRefused("check webhook URL", key=url, reason=reason)
    if parts.scheme == "http" and not all(_loopback(a) for a in addresses):
        raise WebhookRefused("check webhook URL", key=url, reason="http only to loopback")
    return addresses
