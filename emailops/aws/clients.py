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
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from emailops.core.errors import (
    ConfigurationFault,
    EmailOpsError,
    PermanentError,
    TransientError,
)

__all__ = [
    "aws_client",
    "configuration_fix",
    "error_code",
    "lease_client",
    "size_connection_pools",
    "translate_error",
]

_CONFIG = Config(
    # Three calls in all (botocore's max_attempts would be three *retries*): the consumer has its
    # own retry budget.
    retries={"mode": "standard", "total_max_attempts": 3},
    connect_timeout=5,
    read_timeout=30,  # above SQS's 20 s long poll
    # AWS validates every request anyway; botocore's client-side copy was ~10 % of the
    # consumer's CPU per email.
    parameter_validation=False,
)
# The lease keeper's clients: a hung connection must cost seconds, not the 30 s x 3 above, or every
# lease the process holds lapses behind it. A failed extension is tried again at the next tick.
_LEASE_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 2},
    connect_timeout=2,
    read_timeout=2,
    parameter_validation=False,
    max_pool_connections=16,
)
# One call, never retried by the SDK: a SendEmail whose reply was lost (ReadTimeoutError) may have
# gone out, and botocore would send it again at once, before the SES Send event could reconcile
# the row. The pipeline's own back-off decides instead.
_NO_RETRIES = Config(retries={"mode": "standard", "total_max_attempts": 1})
_lock = threading.Lock()
_pool = {"size": 10}  # botocore's default; the consumer sizes it to its concurrency


def size_connection_pools(size: int) -> None:
    """Give every client created from now on ``size`` pooled connections (one per worker thread
    plus the receivers), so threads never queue for a connection."""
    with _lock:
        _pool["size"] = max(10, size)
        _cached_client.cache_clear()


@functools.cache
def _session(region: str | None) -> boto3.session.Session:
    return boto3.session.Session(region_name=region)


def aws_client(
    service: str,
    *,
    region: str | None = None,
    sdk_retries: bool = True,
    s3_addressing_style: str = "auto",
) -> Any:
    """A boto3 client; creating one is not thread-safe in boto3, so it happens under a lock.
    ``sdk_retries=False``: a separate client whose calls botocore never repeats (SES sends)."""
    with _lock:
        return _cached_client(service, region, sdk_retries, s3_addressing_style)


def lease_client(service: str, *, region: str | None = None) -> Any:
    """A client for lease extensions and visibility changes (short timeouts, two attempts)."""
    with _lock:
        return _cached_lease_client(service, region)


@functools.cache
def _cached_lease_client(service: str, region: str | None) -> Any:
    return _session(region).client(service, config=_LEASE_CONFIG)


@functools.cache
def _cached_client(
    service: str, region: str | None, sdk_retries: bool = True, s3_addressing_style: str = "auto"
) -> Any:
    config = _CONFIG.merge(Config(max_pool_connections=_pool["size"]))
    if service == "s3":
        config = config.merge(Config(s3={"addressing_style": s3_addressing_style}))
    if not sdk_retries:
        config = config.merge(_NO_RETRIES)
    return _session(region).client(service, config=config)


def reset_clients() -> None:
    """Forget cached clients (tests switch endpoints and moto contexts)."""
    _cached_client.cache_clear()
    _cached_lease_client.cache_clear()
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
    "ItemCollectionSizeLimitExceededException",
}

_CREDENTIALS_FIX = "check the IAM role or credentials and the policy in docs/deploy.md"
# Faults an operator fixes; records wait for the fix instead of failing (see ConfigurationFault).
CONFIGURATION_FAULTS = {
    "AccessDenied": _CREDENTIALS_FIX,
    "AccessDeniedException": _CREDENTIALS_FIX,
    "UnauthorizedOperation": _CREDENTIALS_FIX,
    "InvalidClientTokenId": _CREDENTIALS_FIX,
    "UnrecognizedClientException": _CREDENTIALS_FIX,
    "SignatureDoesNotMatch": _CREDENTIALS_FIX,
    "ExpiredToken": _CREDENTIALS_FIX,
    "ExpiredTokenException": _CREDENTIALS_FIX,
    "ResourceNotFoundException": "create the DynamoDB table (manage.py bootstrap_aws) or fix "
    "TEMPLATES_TABLE / JOURNAL_TABLE",
    "NoSuchBucket": "create the bucket (manage.py bootstrap_aws) or fix S3_BUCKET",
    "AWS.SimpleQueueService.NonExistentQueue": "create the queue or fix EMAIL_SERVICE_QUEUE_URL",
    "QueueDoesNotExist": "create the queue or fix EMAIL_SERVICE_QUEUE_URL",
    "MailFromDomainNotVerified": "verify the MAIL FROM domain in SES",
    "MailFromDomainNotVerifiedException": "verify the MAIL FROM domain in SES",
    "AccountSendingPausedException": "SES sending is paused for the account: see the SES console",
    "ConfigurationSetDoesNotExist": "create the SES configuration set or fix SES_CONFIGURATION_SET",
    "ConfigurationSetDoesNotExistException": "create the SES configuration set or fix "
    "SES_CONFIGURATION_SET",
}
# SES answers MessageRejected both for a bad message and for these account problems.
_SES_ACCOUNT_REJECTIONS = (
    (
        "not verified",
        "verify the sender identity (EMAIL_SENDER) in SES, or, while the account is "
        "in the SES sandbox, the recipient too; request production access to leave the sandbox",
    ),
    ("sandbox", "request SES production access: the account is in the sandbox"),
    ("sending paused", "SES sending is paused for the account: see the SES console"),
)


def configuration_fix(code: str, message: str) -> str | None:
    """What an operator must do about this AWS error, or None when it is not a setup fault."""
    if code == "MessageRejected":
        lowered = message.lower()
        return next((fix for words, fix in _SES_ACCOUNT_REJECTIONS if words in lowered), None)
    return CONFIGURATION_FAULTS.get(code)


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
        fix = configuration_fix(code, message)
        if fix and code not in permanent_codes:
            return ConfigurationFault(what, key=key, reason=reason, fix=fix)
        if code in PERMANENT_CODES or code in permanent_codes:
            return permanent_class(what, key=key, reason=reason)
        return TransientError(what, key=key, reason=reason)
    if isinstance(exc, NoCredentialsError):
        return ConfigurationFault(what, key=key, reason="no AWS credentials", fix=_CREDENTIALS_FIX)
    if isinstance(exc, BotoCoreError):
        return TransientError(what, key=key, reason=f"{type(exc).__name__}: {exc}")
    raise TypeError(f"not an AWS error: {exc!r}")
