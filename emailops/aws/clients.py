"""boto3 clients and the translation of AWS errors into the core's exceptions.

Clients come from boto3's standard credential chain; ``AWS_ENDPOINT_URL`` (read by boto3 itself)
points every service at moto locally. Clients are thread-safe and cached per service.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from emailops.core.errors import EmailOpsError, PermanentError, TransientError

__all__ = ["aws_client", "error_code", "translate_error"]

_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 3},
    connect_timeout=5,
    read_timeout=30,  # above SQS's 20 s long poll
)
_lock = threading.Lock()


@functools.cache
def _session(region: str | None) -> boto3.session.Session:
    return boto3.session.Session(region_name=region)


def aws_client(service: str, *, region: str | None = None) -> Any:
    """A boto3 client; creating one is not thread-safe in boto3, so it happens under a lock."""
    with _lock:
        return _cached_client(service, region)


@functools.cache
def _cached_client(service: str, region: str | None) -> Any:
    return _session(region).client(service, config=_CONFIG)


def reset_clients() -> None:
    """Forget cached clients (tests switch endpoints and moto contexts)."""
    _cached_client.cache_clear()
    _session.cache_clear()


def error_code(exc: ClientError) -> str:
    return exc.response.get("Error", {}).get("Code", "")


# Codes that mean "this request, as it is, will never succeed". Everything else — throttling,
# 5xx, network trouble, and also access or configuration problems that an operator can fix — is
# transient: the record waits on the queue rather than being dead-lettered for a fault not its own.
PERMANENT_CODES = {
    "ValidationException",
    "InvalidParameterValue",
    "InvalidParameterCombination",
    "MessageRejected",
    "MailFromDomainNotVerified",
    "MailFromDomainNotVerifiedException",
    "ItemCollectionSizeLimitExceededException",
}


def translate_error(
    exc: Exception,
    what: str,
    *,
    key: str | None = None,
    permanent_codes: frozenset[str] = frozenset(),
    permanent_class: type[PermanentError] = PermanentError,
) -> EmailOpsError:
    """Wrap a boto error in the core's exception of the right kind, keeping AWS's words."""
    if isinstance(exc, ClientError):
        code = error_code(exc)
        message = exc.response.get("Error", {}).get("Message", "")
        reason = f"{code}: {message}" if message else code
        if code in PERMANENT_CODES or code in permanent_codes:
            return permanent_class(what, key=key, reason=reason)
        return TransientError(what, key=key, reason=reason)
    if isinstance(exc, BotoCoreError):
        return TransientError(what, key=key, reason=f"{type(exc).__name__}: {exc}")
    raise TypeError(f"not an AWS error: {exc!r}")
