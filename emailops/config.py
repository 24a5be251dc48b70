"""The settings the adapters are built from, read into typed sections and checked once.

``Config.from_settings()`` reads Django's settings (themselves read from the environment by
``emailops.settings``) and refuses a malformed value at once, with an ImproperlyConfigured naming
the variable. A value only some processes need (the request queue, the sender address) may be
empty here: the container refuses it when the adapter that needs it is built (``require``), so the
console starts without the consumer's queue and the consumer fails at start-up without it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from email.utils import formataddr, parseaddr
from typing import Any, TypeVar

from django.core.exceptions import ImproperlyConfigured

__all__ = [
    "GO_LEASE_SECONDS_DEFAULT",
    "ApiConfig",
    "AwsConfig",
    "Config",
    "ConsoleConfig",
    "EventsConfig",
    "ReputationConfig",
    "SendingConfig",
    "require",
    "setting",
]

S = TypeVar("S")

# A Go row's claim (it has no ClaimExpiresAt) when CLAIM_LEASE_SECONDS is unset: the visibility
# timeout bootstrap_aws gives the queue (``emailops.aws.provision.ensure_queue``).
GO_LEASE_SECONDS_DEFAULT = 60


def require(name: str, value: str) -> str:
    """``value``, or the clear error every process gives for a missing setting."""
    if not value:
        raise ImproperlyConfigured(f"{name} is not set (see .env.example)")
    return value


def setting(name: str, parse: Callable[[Any], Any] | None = None) -> Any:
    """A section's field read from the Django setting ``name`` (itself the environment variable's
    name), through ``parse`` (which checks it) when given."""
    return field(metadata={"setting": name, "parse": parse})


def _read(section: type[S], settings: Any, **computed: Any) -> S:
    values = dict(computed)
    for item in fields(section):  # type: ignore[arg-type]
        if item.name in values:
            continue
        value = getattr(settings, item.metadata["setting"])
        parse = item.metadata["parse"]
        values[item.name] = parse(value) if parse else value
    return section(**values)


@dataclass(frozen=True)
class AwsConfig:
    """Where the service's AWS resources are (names match the Go service)."""

    region: str = setting("AWS_REGION")
    s3_addressing_style: str = setting("AWS_S3_ADDRESSING_STYLE")
    templates_table: str = setting("TEMPLATES_TABLE")
    journal_table: str = setting("JOURNAL_TABLE")
    suppression_table: str = setting("SUPPRESSION_TABLE")
    s3_bucket: str = setting("S3_BUCKET")
    queue_url: str = setting("EMAIL_SERVICE_QUEUE_URL")


@dataclass(frozen=True)
class SendingConfig:
    """The pipeline: sender, claims, retries, caches, the shared send rate, suppressions."""

    from_address: str  # empty: neither EMAIL_SENDER nor PENNSIEVE_DOMAIN is set
    reply_to: tuple[str, ...]
    journal_ttl_days: int = setting("JOURNAL_TTL_DAYS")
    retry_max_seconds: int = setting("RETRY_MAX_SECONDS")
    retry_backoff_base_seconds: int = setting("RETRY_BACKOFF_BASE_SECONDS")
    retry_backoff_cap_seconds: int = setting("RETRY_BACKOFF_CAP_SECONDS")
    claim_lease_seconds: int = setting("CLAIM_LEASE_SECONDS")
    claim_send_margin_seconds: int = setting("CLAIM_SEND_MARGIN_SECONDS")
    template_cache_seconds: int = setting("TEMPLATE_CACHE_SECONDS")
    # None: SES's MaxSendRate; 0: no limit
    max_send_rate: float | None = setting("SES_MAX_SEND_RATE", lambda v: _send_rate(v))
    quota_pause_seconds: int = setting("SES_QUOTA_PAUSE_SECONDS")
    redis_url: str = setting("REDIS_URL")
    rate_redis_key: str = setting("SES_RATE_REDIS_KEY")
    rate_fallback_consumers: int = setting("SES_RATE_FALLBACK_CONSUMERS")
    configuration_set: str = setting("SES_CONFIGURATION_SET")
    simulate_events: bool = setting("SES_SIMULATE_EVENTS")
    account_suppression_sync: bool = setting("SES_ACCOUNT_SUPPRESSION_SYNC")
    suppression_index_key: str = setting("SUPPRESSION_INDEX_REDIS_KEY")

    @property
    def go_lease_seconds(self) -> int:
        """How long a claim lasted on a row without ClaimExpiresAt (the Go consumer's): the one
        value every page, ``email_log``, the API and the stuck-claims check apply (none asks SQS)."""
        return self.claim_lease_seconds or GO_LEASE_SECONDS_DEFAULT

    def addresses(self) -> tuple[str, tuple[str, ...]]:
        """(From, Reply-To); refused when there is no sender at all."""
        if not self.from_address:
            raise ImproperlyConfigured(
                "EMAIL_SENDER is not set (nor PENNSIEVE_DOMAIN to derive it from)"
            )
        return self.from_address, self.reply_to


@dataclass(frozen=True)
class EventsConfig:
    """SES delivery events: the queue consume_ses_events reads and how it trusts a message."""

    queue_url: str = setting("SES_EVENTS_QUEUE_URL")
    unmatched_table: str = setting("SES_EVENTS_UNMATCHED_TABLE")
    topic_name: str = setting("SES_EVENTS_TOPIC_NAME")
    topic_arns: tuple[str, ...] = setting("SES_EVENTS_TOPIC_ARNS", tuple)
    verify_signatures: bool = setting("SES_EVENTS_VERIFY_SIGNATURES")
    raw_delivery: bool = setting("SES_EVENTS_RAW_DELIVERY")


@dataclass(frozen=True)
class ReputationConfig:
    """Counters and the guard."""

    stats_table: str = setting("STATS_TABLE")  # empty: nothing is counted
    stats_flush_seconds: float = setting("STATS_FLUSH_SECONDS")
    slow_share: float = setting("REPUTATION_SLOW_SHARE", lambda v: _share(v))
    pause_wait_seconds: int = setting("REPUTATION_PAUSE_WAIT_SECONDS")


@dataclass(frozen=True)
class ConsoleConfig:
    """The console's reads of the journal."""

    # epoch seconds when the Go consumer stopped writing
    go_cutover: int | None = setting("JOURNAL_GO_CUTOVER", lambda v: _go_cutover(v))


@dataclass(frozen=True)
class ApiConfig:
    max_recipients: int = setting("API_MAX_RECIPIENTS")
    redis_url: str = setting("REDIS_URL")


@dataclass(frozen=True)
class Config:
    aws: AwsConfig
    sending: SendingConfig
    events: EventsConfig
    reputation: ReputationConfig
    console: ConsoleConfig
    api: ApiConfig

    @classmethod
    def from_settings(cls, settings: Any = None) -> Config:
        """Read and check; ImproperlyConfigured names the first malformed variable."""
        if settings is None:
            from django.conf import settings
        from_address, reply_to = _sender(
            settings.EMAIL_SENDER, settings.EMAIL_REPLY_TO, settings.PENNSIEVE_DOMAIN
        )
        return cls(
            aws=_read(AwsConfig, settings),
            sending=_read(SendingConfig, settings, from_address=from_address, reply_to=reply_to),
            events=_read(EventsConfig, settings),
            reputation=_read(ReputationConfig, settings),
            console=_read(ConsoleConfig, settings),
            api=_read(ApiConfig, settings),
        )

    def check_sending(self) -> None:
        """What the email consumer and the send API cannot run without."""
        self.sending.addresses()
        aws = self.aws
        require("EMAIL_SERVICE_QUEUE_URL", aws.queue_url)
        require("TEMPLATES_TABLE", aws.templates_table)
        require("JOURNAL_TABLE", aws.journal_table)
        require("S3_BUCKET", aws.s3_bucket)

    def check_events(self) -> None:
        """What the events consumer cannot run without."""
        events = self.events
        require("SES_EVENTS_QUEUE_URL", events.queue_url)
        require("JOURNAL_TABLE", self.aws.journal_table)
        require("SUPPRESSION_TABLE", self.aws.suppression_table)
        if events.verify_signatures and not events.topic_arns:
            # A valid signature only proves SNS sent it: from any topic, an attacker's own included.
            raise ImproperlyConfigured(
                "SES_EVENTS_TOPIC_ARNS is empty while SES_EVENTS_VERIFY_SIGNATURES is on: set it to "
                "the events topic's ARN (bootstrap_aws prints it)"
            )

    def require(self, name: str) -> str:
        """The setting ``name`` (as Django's settings spell it), refused when empty."""
        from django.conf import settings

        return require(name, getattr(settings, name, ""))


def _sender(sender: str, reply_to: str, domain: str) -> tuple[str, tuple[str, ...]]:
    """(From, Reply-To): EMAIL_SENDER/EMAIL_REPLY_TO, else Pennsieve's support address."""
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


def _send_rate(value: str) -> float | None:
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


def _share(share: float) -> float:
    if not 0 < share <= 1:
        raise ImproperlyConfigured("REPUTATION_SLOW_SHARE must be a share of the rate in (0, 1]")
    return share


def _go_cutover(value: str) -> int | None:
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
