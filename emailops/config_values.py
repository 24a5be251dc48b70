"""How each setting's value is parsed and checked: the parsers the sections in
``emailops.config`` read their fields through, and the checks of Django's own settings that
``emailops.settings`` calls before Django loads. Each refuses a malformed value with an
ImproperlyConfigured naming the variable.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from email.utils import formataddr, parseaddr

from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.core.exceptions import ImproperlyConfigured

from emailops.core.header_text import control_problem

__all__ = [
    "DEV_SECRET_KEY",
    "HTTPS_MODES",
    "base_url",
    "cap",
    "choice",
    "go_cutover",
    "hour",
    "https_mode",
    "keys",
    "over_cap",
    "positive",
    "send_rate",
    "sender",
    "share",
    "strong_secret_key",
    "webhook_secret_key_derived",
    "webhook_secret_keys",
]


def base_url(value: str) -> str:
    url = value.strip().rstrip("/")
    if not url:
        return ""
    scheme, sep, rest = url.partition("://")
    host = rest.partition("/")[0]
    if scheme not in ("https", "http") or not sep or not host or any(c in rest for c in "?# "):
        raise ImproperlyConfigured(
            "PUBLIC_BASE_URL must be where the unsubscribe links point, e.g. "
            "https://emails.example.org (no query, no trailing slash), or empty for none"
        )
    return url


def choice(name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ImproperlyConfigured(f"{name} must be one of {allowed!r}, not {value!r}")
    return value


def sender(sender: str, reply_to: str, domain: str) -> tuple[str, tuple[str, ...]]:
    """(From, Reply-To): EMAIL_SENDER/EMAIL_REPLY_TO, else Pennsieve's support address."""
    for name, value in (("EMAIL_SENDER", sender), ("EMAIL_REPLY_TO", reply_to)):
        # Each goes into a header of every email as written (an ASCII name unencoded).
        if problem := control_problem(name, value):
            raise ImproperlyConfigured(f"{problem}: it must be one line of printable text")
    if sender:
        name, address = parseaddr(sender)
        if "@" not in address:
            raise ImproperlyConfigured("EMAIL_SENDER must look like 'Display Name <address>'")
        # SES takes a non-ASCII display name only MIME-encoded; an ASCII one stays as written.
        return formataddr((name, address), charset="utf-8"), ((reply_to,) if reply_to else ())
    if domain:
        support = f"support@{domain}"
        return f"Pennsieve <{support}>", (reply_to or support,)
    return "", ()


def send_rate(value: str) -> float | None:
    if not value.strip():
        return None
    try:
        rate = float(value)
    except ValueError:
        rate = -1.0
    if not rate >= 0 or rate == float("inf"):
        raise ImproperlyConfigured(
            "SES_MAX_SEND_RATE must be emails per second (e.g. 14 or 0.5), 0 for no limit, "
            "or unset to use SES's MaxSendRate"
        )
    return rate


def cap(name: str, value: int) -> int:
    if value < 0:
        raise ImproperlyConfigured(f"{name} must be 0 (off) or a positive whole number")
    return value


def positive(name: str, value: int) -> int:
    if value < 1:
        raise ImproperlyConfigured(f"{name} must be a positive whole number")
    return value


def over_cap(value: str) -> str:
    choice = value.strip().lower()
    if choice not in ("hold", "log-only"):
        raise ImproperlyConfigured("RATE_SAFEGUARD_OVER_CAP must be hold or log-only")
    return choice


def share(share: float) -> float:
    if not 0 < share <= 1:
        raise ImproperlyConfigured("REPUTATION_SLOW_SHARE must be a share of the rate in (0, 1]")
    return share


def go_cutover(value: str) -> int | None:
    """JOURNAL_GO_CUTOVER as epoch seconds (a date or a time without a zone is UTC)."""
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ImproperlyConfigured(
            "JOURNAL_GO_CUTOVER must be an ISO date or time, e.g. 2026-12-01T09:00:00Z"
        ) from None
    return int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp())


def hour(hour: int) -> int:
    if not 0 <= hour <= 23:
        raise ImproperlyConfigured(
            "OPS_TEMPLATE_CHECK_HOUR must be an hour of the day, 0 to 23 (UTC)"
        )
    return hour


def keys(keys: list[str]) -> tuple[str, ...]:
    return tuple(key.strip().lower() for key in keys if key.strip())


_CLIENT = re.compile(r"^[a-z0-9-]+\.[a-z0-9-]+$")


def clients(names: list[str]) -> tuple[str, ...]:
    """TEMPLATE_CHECK_CLIENTS: caniemail's ``family.platform`` names, e.g. ``outlook.windows``."""
    found = tuple(name.strip().lower() for name in names if name.strip())
    wrong = [name for name in found if not _CLIENT.match(name)]
    if wrong:
        raise ImproperlyConfigured(
            f"TEMPLATE_CHECK_CLIENTS: {', '.join(wrong)} is not family.platform "
            "(e.g. outlook.windows, gmail.android)"
        )
    return found


def host_port(value: str) -> str:
    """SPAMD_ADDRESS: ``host:port``, or empty (not scored)."""
    value = value.strip()
    host, _, port = value.rpartition(":")
    if value and not (host and port.isdigit() and 0 < int(port) < 65536):
        raise ImproperlyConfigured(
            f"SPAMD_ADDRESS must be host:port, e.g. 127.0.0.1:783 (not {value!r})"
        )
    return value


# --- Django's own settings, checked as emailops.settings reads them (before Django loads) -------

DEV_SECRET_KEY = "insecure-dev-key-change-me"


def strong_secret_key(key: str, *, debug: bool) -> str:
    """With DEBUG off the key signs sessions and password resets: refuse to start on a weak one.
    The bar is Django's own (security.W009): 50 characters, 5 distinct, not a generated dev key."""
    if debug:
        return key or DEV_SECRET_KEY
    if (
        len(key) < 50
        or len(set(key)) < 5
        or key == DEV_SECRET_KEY
        or key.startswith("django-insecure-")
    ):
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY must be set to a strong secret when DJANGO_DEBUG is off "
            "(at least 50 characters, at least 5 distinct, not the development default). "
            "Generate one: python -c 'import secrets; print(secrets.token_urlsafe(64))'. "
            "On a development machine set DJANGO_DEBUG=true instead."
        )
    return key


HTTPS_MODES = ("proxy", "on", "off")


def https_mode(value: str) -> str:
    """DJANGO_HTTPS: proxy (TLS ends at a proxy that sets X-Forwarded-Proto), on, or off."""
    mode = value.strip().lower()
    if mode not in HTTPS_MODES:
        raise ImproperlyConfigured(
            "DJANGO_HTTPS must be proxy (TLS ends at a load balancer that sets X-Forwarded-Proto), "
            f"on (https, no forwarded header trusted) or off (plain http), not {value!r}"
        )
    return mode


def webhook_secret_key_derived(secret_key: str) -> str:
    """The Fernet key that seals webhook secrets when WEBHOOK_SECRET_KEYS is empty: HKDF-SHA256
    of ``secret_key`` (DJANGO_SECRET_KEY, or one of its fallbacks), salt ``emailops``, info
    ``webhook endpoint secrets``. A key of its own: knowing it says nothing of the secret key."""
    derived = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=b"emailops", info=b"webhook endpoint secrets"
    ).derive(secret_key.encode())
    return base64.urlsafe_b64encode(derived).decode()


def webhook_secret_keys(
    configured: Iterable[str], secret_key: str, fallbacks: Iterable[str] = ()
) -> tuple[str, ...]:
    """The keys that seal and open the endpoints' secrets, the sealing one first:
    WEBHOOK_SECRET_KEYS (each a Fernet key), then the keys derived from DJANGO_SECRET_KEY and
    its fallbacks, which always open (so setting WEBHOOK_SECRET_KEYS, or rotating the secret
    key, leaves every sealed secret readable)."""
    keys = [key.strip() for key in configured if key.strip()]
    for key in keys:
        try:
            Fernet(key)
        except ValueError:
            raise ImproperlyConfigured(
                "WEBHOOK_SECRET_KEYS must be a comma list of Fernet keys (44 characters of "
                "URL-safe base64; make one with python -c 'from cryptography.fernet import "
                "Fernet; print(Fernet.generate_key().decode())')"
            ) from None
    derived = [webhook_secret_key_derived(key) for key in (secret_key, *fallbacks) if key]
    return tuple(dict.fromkeys([*keys, *derived]))
