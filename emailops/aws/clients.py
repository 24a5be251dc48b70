"""boto3 clients and the translation of AWS errors into the core's exceptions.

Clients come from boto3's standard credential chain; ``AWS_ENDPOINT_URL`` (read by boto3 itself)
points every service at moto locally. Each container has its own clients (``AwsClients``).
"""

from __future__ import annotations

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
    "AwsClients",
    "configuration_fix",
    "error_code",
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
# A boto3 session (the credential chain and the service models it has parsed) is shared by every
# container: it holds no connection, and a client made from a fresh one costs ~100 ms against ~7
# from a used one (a test builds a container after each reset). Making a client from it is not
# thread-safe in boto3, so that happens under this lock.
_session_lock = threading.Lock()
_sessions: dict[str | None, boto3.session.Session] = {}
DEFAULT_POOL_SIZE = 10  # botocore's default; a consumer's container asks for one per thread


def _session(region: str | None) -> boto3.session.Session:
    session = _sessions.get(region)
    if session is None:
        session = _sessions[region] = boto3.session.Session(region_name=region)
    return session


class AwsClients:
    """One container's boto3 clients, each made on first use and kept (clients are thread-safe,
    and a kept client keeps its connections); each pools ``pool_size`` connections. A container
    with other pools (a consumer's) has its own ``AwsClients``: nothing here is process-wide."""

    def __init__(self, *, pool_size: int = DEFAULT_POOL_SIZE) -> None:
        self.pool_size = max(DEFAULT_POOL_SIZE, pool_size)
        self._made: dict[tuple[str | bool | None, ...], Any] = {}

    def client(
        self,
        service: str,
        *,
        region: str | None = None,
        sdk_retries: bool = True,
        s3_addressing_style: str = "auto",
    ) -> Any:
        """``sdk_retries=False``: a separate client whose calls botocore never repeats (SES sends)."""
        key = ("main", service, region, sdk_retries, s3_addressing_style)
        config = _CONFIG.merge(Config(max_pool_connections=self.pool_size))
        if service == "s3":
            config = config.merge(Config(s3={"addressing_style": s3_addressing_style}))
        if not sdk_retries:
            config = config.merge(_NO_RETRIES)
        return self._get(key, service, region, config)

    def lease_client(self, service: str, *, region: str | None = None) -> Any:
        """A client for lease extensions and visibility changes (short timeouts, two attempts)."""
        return self._get(("lease", service, region), service, region, _LEASE_CONFIG)

    def made(self) -> list[Any]:
        """The clients made so far (a benchmark counts their calls)."""
        return list(self._made.values())

    def _get(
        self, key: tuple[str | bool | None, ...], service: str, region: str | None, config: Config
    ) -> Any:
        made = self._made.get(key)
        if made is None:
            with _session_lock:
                made = self._made.get(key)
                if made is None:
                    made = self._made[key] = _session(region).client(service, config=config)
        return made


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
