"""The settings the adapters are built from, read into typed sections and checked once.

``Config.from_settings()`` reads Django's settings (themselves read from the environment by
``emailops.settings``) and refuses a malformed value at once, with an ImproperlyConfigured naming
the variable. A value only some processes need (the request queue, the sender address) may be
empty here: the container refuses it when the adapter that needs it is built (``require``), so the
console starts without the consumer's queue and the consumer fails at start-up without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import formataddr, parseaddr
from typing import Any

from django.core.exceptions import ImproperlyConfigured

__all__ = [
    "ApiConfig",
    "AwsConfig",
    "Config",
    "ConsoleConfig",
    "EventsConfig",
    "ReputationConfig",
    "SendingConfig",
    "require",
]


def require(name: str, value: str) -> str:
    """``value``, or the clear error every process gives for a missing setting."""
    if not value:
        raise ImproperlyConfigured(f"{name} is not set (see .env.example)")
    return value


@dataclass(frozen=True)
class AwsConfig:
    """Where the service's AWS resources are (names match the Go service)."""

    region: str
    s3_addressing_style: str
    templates_table: str
    journal_table: str
    suppression_table: str
    s3_bucket: str
    queue_url: str


@dataclass(frozen=True)
class SendingConfig:
    """The pipeline: sender, claims, retries, caches, the shared send rate, suppressions."""

    from_address: str  # empty: neither EMAIL_SENDER nor PENNSIEVE_DOMAIN is set
    reply_to: tuple[str, ...]
    journal_ttl_days: int
    retry_max_seconds: int
    retry_backoff_base_seconds: int
    retry_backoff_cap_seconds: int
    claim_lease_seconds: int
    claim_send_margin_seconds: int
    template_cache_seconds: int
    max_send_rate: float | None  # None: SES's MaxSendRate; 0: no limit
    quota_pause_seconds: int
    redis_url: str
    rate_redis_key: str
    rate_fallback_consumers: int
    configuration_set: str
    simulate_events: bool
    account_suppression_sync: bool
    suppression_index_key: str

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

    queue_url: str
    unmatched_table: str
    topic_name: str
    topic_arns: tuple[str, ...]
    verify_signatures: bool
    raw_delivery: bool


@dataclass(frozen=True)
class ReputationConfig:
    """Counters and the guard."""

    stats_table: str  # empty: nothing is counted
    stats_flush_seconds: float
    slow_share: float
    pause_wait_seconds: int


@dataclass(frozen=True)
class ConsoleConfig:
    """The console's reads of the journal."""

    go_cutover: int | None  # epoch seconds when the Go consumer stopped writing


@dataclass(frozen=True)
class ApiConfig:
    max_recipients: int
    redis_url: str


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
        s = settings
        from_address, reply_to = _sender(s.EMAIL_SENDER, s.EMAIL_REPLY_TO, s.PENNSIEVE_DOMAIN)
        return cls(
            aws=AwsConfig(
                region=s.AWS_REGION,
                s3_addressing_style=s.AWS_S3_ADDRESSING_STYLE,
                templates_table=s.TEMPLATES_TABLE,
                journal_table=s.JOURNAL_TABLE,
                suppression_table=s.SUPPRESSION_TABLE,
                s3_bucket=s.S3_BUCKET,
                queue_url=s.EMAIL_SERVICE_QUEUE_URL,
            ),
            sending=SendingConfig(
                from_address=from_address,
                reply_to=reply_to,
                journal_ttl_days=s.JOURNAL_TTL_DAYS,
                retry_max_seconds=s.RETRY_MAX_SECONDS,
                retry_backoff_base_seconds=s.RETRY_BACKOFF_BASE_SECONDS,
                retry_backoff_cap_seconds=s.RETRY_BACKOFF_CAP_SECONDS,
                claim_lease_seconds=s.CLAIM_LEASE_SECONDS,
                claim_send_margin_seconds=s.CLAIM_SEND_MARGIN_SECONDS,
                template_cache_seconds=s.TEMPLATE_CACHE_SECONDS,
                max_send_rate=_send_rate(s.SES_MAX_SEND_RATE),
                quota_pause_seconds=s.SES_QUOTA_PAUSE_SECONDS,
                redis_url=s.REDIS_URL,
                rate_redis_key=s.SES_RATE_REDIS_KEY,
                rate_fallback_consumers=s.SES_RATE_FALLBACK_CONSUMERS,
                configuration_set=s.SES_CONFIGURATION_SET,
                simulate_events=s.SES_SIMULATE_EVENTS,
                account_suppression_sync=s.SES_ACCOUNT_SUPPRESSION_SYNC,
                suppression_index_key=s.SUPPRESSION_INDEX_REDIS_KEY,
            ),
            events=EventsConfig(
                queue_url=s.SES_EVENTS_QUEUE_URL,
                unmatched_table=s.SES_EVENTS_UNMATCHED_TABLE,
                topic_name=s.SES_EVENTS_TOPIC_NAME,
                topic_arns=tuple(s.SES_EVENTS_TOPIC_ARNS),
                verify_signatures=s.SES_EVENTS_VERIFY_SIGNATURES,
                raw_delivery=s.SES_EVENTS_RAW_DELIVERY,
            ),
            reputation=ReputationConfig(
                stats_table=s.STATS_TABLE,
                stats_flush_seconds=s.STATS_FLUSH_SECONDS,
                slow_share=_share(s.REPUTATION_SLOW_SHARE),
                pause_wait_seconds=s.REPUTATION_PAUSE_WAIT_SECONDS,
            ),
            console=ConsoleConfig(go_cutover=_go_cutover(s.JOURNAL_GO_CUTOVER)),
            api=ApiConfig(max_recipients=s.API_MAX_RECIPIENTS, redis_url=s.REDIS_URL),
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
