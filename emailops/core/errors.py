"""The core's exceptions.

Every failure the pipeline can meet is one of two kinds, and the kind lives on the exception (not in
scattered ``if``s): a *permanent* failure will fail the same way on every retry, so the record goes to
the dead-letter queue at once; a *transient* one (throttling, 5xx, timeouts) is retried with back-off.
Each exception carries what was being done, on which key, and why, so one log line explains it.
"""

from __future__ import annotations


class EmailOpsError(Exception):
    """Base class. ``what`` is the operation, ``key`` what it was about, ``reason`` why it failed."""

    permanent: bool = True

    def __init__(self, what: str, *, key: str | None = None, reason: str = "") -> None:
        self.what = what
        self.key = key
        self.reason = reason
        super().__init__(self.describe())

    def describe(self) -> str:
        where = f" [{self.key}]" if self.key else ""
        why = f": {self.reason}" if self.reason else ""
        return f"{self.what}{where}{why}"


class PermanentError(EmailOpsError):
    """Retrying cannot help: bad input, unknown messageId, missing template, rejected address."""

    permanent = True


class TransientError(EmailOpsError):
    """Retrying later may help: throttling, 5xx, network trouble."""

    permanent = False


class InvalidRequest(PermanentError, ValueError):
    """The SQS body does not follow the EmailRequest contract.

    ``request`` is set when the body parsed far enough for its recipients to be known; ``field``
    names the wire field at fault (``recipients[0].email``), None when it is the whole body.
    """

    request = None

    def __init__(
        self, what: str, *, key: str | None = None, reason: str = "", field: str | None = None
    ) -> None:
        self.field = field
        super().__init__(what, key=key, reason=reason)


class UnknownMessageId(PermanentError, LookupError):
    """No row in the templates table for this messageId."""


class TemplateNotFound(PermanentError, LookupError):
    """Neither the branded nor the default template exists in the bucket."""


class TemplateError(PermanentError):
    """A template or subject does not compile, fails to render, or tries to escape the sandbox.

    ``line`` is the template line where Jinja2 located the problem, when it could.
    """

    def __init__(
        self, what: str, *, key: str | None = None, reason: str = "", line: int | None = None
    ):
        self.line = line
        super().__init__(what, key=key, reason=reason)


class SendRejected(PermanentError):
    """The mail provider refused this message for good (bad address, unverified sender...)."""


class ConcurrentUpdate(PermanentError):
    """A conditional write lost against another writer (e.g. two people editing one mapping)."""

    def __init__(self, what: str, *, key: str | None = None, reason: str = "", current=None):
        self.current = current
        super().__init__(what, key=key, reason=reason)


class ForeignRow(PermanentError):
    """A journal row with this key exists but another producer wrote it: not ours to touch."""


class ConfigurationError(PermanentError):
    """A resource the service needs is missing or misconfigured (no DLQ, no table...)."""


class ConfigurationFault(TransientError):
    """An operator must fix something (unverified sender, SES sandbox, access denied, a missing
    table, bucket or queue). Records wait for the fix: never FAILED, never dead-lettered.

    ``fix`` says what to do, in plain words.
    """

    def __init__(self, what: str, *, key: str | None = None, reason: str = "", fix: str = ""):
        self.fix = fix
        super().__init__(what, key=key, reason=reason)


class SendThrottled(TransientError):
    """SES: "Maximum sending rate exceeded". The shared send rate is lowered."""


class DailyQuotaExceeded(TransientError):
    """SES: "Daily message quota exceeded". Sending pauses; records stay on the queue."""


class SharedStateUnavailable(TransientError):
    """A shared store (Redis: the send-rate bucket, the suppression index, the guard's pauses, the
    API's counters) cannot be reached or answered with an error. Raised by ``emailops.redis``, the
    one package that talks to Redis, so no caller above it needs to know Redis's exceptions."""


class LeaseUnknown(ConfigurationFault):
    """``CLAIM_LEASE_SECONDS`` is 0 and the request queue's visibility timeout, the claim lease's
    length then, cannot be read: no process can tell when a Go-era row's claim ends."""

    def __init__(self, *, reason: str) -> None:
        fix = "set CLAIM_LEASE_SECONDS, or EMAIL_SERVICE_QUEUE_URL to a queue this process may read"
        super().__init__(
            "read the claim lease",
            reason=f"CLAIM_LEASE_SECONDS is 0, so the lease is the request queue's visibility "
            f"timeout, which could not be read ({reason}): {fix}",
            fix=fix,
        )
