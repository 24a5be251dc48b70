"""The settings the adapters are built from, read into typed sections and checked once.

``Config.from_settings()`` reads Django's settings (themselves read from the environment by
``emailops.settings``) and refuses a malformed value at once, with an ImproperlyConfigured naming
the variable. A value only some processes need (the request queue, the sender address) may be
empty here: the container refuses it when the adapter that needs it is built (``require``), so the
console starts without the consumer's queue and the consumer fails at start-up without it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import Field, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from django.core.exceptions import ImproperlyConfigured

from emailops import config_values as values

if TYPE_CHECKING:
    from django.core.checks import CheckMessage

__all__ = [
    "ApiConfig",
    "AwsConfig",
    "Config",
    "ConsoleConfig",
    "EventsConfig",
    "OpsConfig",
    "PreferencesConfig",
    "ReputationConfig",
    "SendingConfig",
    "WebhooksConfig",
    "check_settings",
    "require",
    "setting",
    "setting_name",
]

S = TypeVar("S")
_COMPUTED = ("from_address", "reply_to")  # SendingConfig's, from EMAIL_SENDER and its fallbacks


def require(name: str, value: str) -> str:
    """``value``, or the clear error every process gives for a missing setting."""
    if not value:
        raise ImproperlyConfigured(f"{name} is not set (see .env.example)")
    return value


def setting(name: str = "", parse: Callable[[Any], Any] | None = None) -> Any:
    """A field read from the Django setting ``name`` (itself the environment variable's name),
    through ``parse`` (which checks it) when given. A plain field needs neither: its setting is
    the section's ``PREFIX`` and the field's name in capitals."""
    return field(metadata={"setting": name, "parse": parse})


def setting_name(section: type, item: Field) -> str:
    """The setting a section's field reads; empty for one computed from several (the sender)."""
    if item.name in _COMPUTED:
        return ""
    return item.metadata.get("setting") or getattr(section, "PREFIX", "") + item.name.upper()


def _read(section: type[S], settings: Any, **computed: Any) -> S:
    read = dict(computed)
    for item in fields(section):  # type: ignore[arg-type]
        if item.name in read:
            continue
        parse = item.metadata.get("parse")
        value = getattr(settings, setting_name(section, item))
        read[item.name] = parse(value) if parse else value
    return section(**read)


@dataclass(frozen=True)
class AwsConfig:
    """Where the service's AWS resources are (names match the Go service)."""

    region: str = setting("AWS_REGION")
    s3_addressing_style: str = setting("AWS_S3_ADDRESSING_STYLE")
    queue_url: str = setting("EMAIL_SERVICE_QUEUE_URL")
    templates_table: str
    journal_table: str
    suppression_table: str
    s3_bucket: str
    erasure_tombstone_table: str = setting("ERASURE_TOMBSTONE_TABLE")
    preferences_table: str = setting("PREFERENCES_TABLE")
    # the tombstones' HMAC key; repr=False: never printed with the config
    erasure_hash_key: str = field(repr=False, metadata={"setting": "ERASURE_HASH_KEY"})


@dataclass(frozen=True)
class SendingConfig:
    """The pipeline and the email consumer: sender, claims, retries, caches, the shared send
    rate, suppressions."""

    from_address: str  # empty: neither EMAIL_SENDER nor PENNSIEVE_DOMAIN is set
    reply_to: tuple[str, ...]
    journal_ttl_days: int
    retry_max_seconds: int
    retry_backoff_base_seconds: int
    retry_backoff_cap_seconds: int
    claim_lease_seconds: int  # 0: the queue's visibility timeout (Container.lease_policy)
    claim_send_margin_seconds: int
    template_cache_seconds: int
    consumer_concurrency: int
    consumer_metrics_port: int
    redis_url: str
    # None (the fixed value): <SES_RATE_REDIS_KEY>:suppressed (suppression_index_prefix)
    suppression_index_key: str | None = setting("SUPPRESSION_INDEX_REDIS_KEY")
    # None: SES's MaxSendRate; 0: no limit
    max_send_rate: float | None = setting("SES_MAX_SEND_RATE", values.send_rate)
    quota_pause_seconds: int = setting("SES_QUOTA_PAUSE_SECONDS")
    rate_redis_key: str = setting("SES_RATE_REDIS_KEY")
    rate_fallback_consumers: int = setting("SES_RATE_FALLBACK_CONSUMERS")
    configuration_set: str = setting("SES_CONFIGURATION_SET")
    simulate_events: bool = setting("SES_SIMULATE_EVENTS")
    account_suppression_sync: bool = setting("SES_ACCOUNT_SUPPRESSION_SYNC")
    # The send guard (emailops.core.send_guard); an empty table: no guard.
    send_enabled: bool = setting("SEND_ENABLED")
    rate_limit_table: str = setting("RATE_LIMIT_TABLE")
    send_rate_limit_per_minute: int = setting(
        parse=lambda v: values.cap("SEND_RATE_LIMIT_PER_MINUTE", v)
    )
    per_message_rate_limit_per_minute: int = setting(
        parse=lambda v: values.cap("PER_MESSAGE_RATE_LIMIT_PER_MINUTE", v)
    )
    rate_safeguard_over_cap: str = setting(parse=values.over_cap)
    rate_safeguard_hold_max_seconds: int = setting(
        parse=lambda v: values.cap("RATE_SAFEGUARD_HOLD_MAX_SECONDS", v)
    )
    loop_limit_per_hour: int = setting(parse=lambda v: values.cap("LOOP_LIMIT_PER_HOUR", v))
    # Recipient preferences (emailops.core.preferences): how long the consumer caches them (the
    # links' public address is PreferencesConfig's).
    preferences_cache_seconds: int = setting(
        parse=lambda v: values.cap("PREFERENCES_CACHE_SECONDS", v)
    )

    def addresses(self) -> tuple[str, tuple[str, ...]]:
        """(From, Reply-To); refused when there is no sender at all."""
        if not self.from_address:
            raise ImproperlyConfigured(
                "EMAIL_SENDER is not set (nor PENNSIEVE_DOMAIN to derive it from)"
            )
        return self.from_address, self.reply_to

    @property
    def suppression_index_prefix(self) -> str:
        """The prefix of the erasure tombstones' Redis set; empty: no set (the table alone)."""
        if self.suppression_index_key is None:
            return f"{self.rate_redis_key}:suppressed"
        return self.suppression_index_key


@dataclass(frozen=True)
class EventsConfig:
    """SES delivery events: the queue consume_ses_events reads and how it trusts a message."""

    PREFIX: ClassVar[str] = "SES_EVENTS_"
    queue_url: str
    unmatched_table: str
    topic_name: str
    topic_arns: tuple[str, ...] = setting(parse=tuple)
    verify_signatures: bool
    # How old a signed SNS message may be (0: any age); checked only with signatures verified.
    max_age_seconds: int = setting(parse=lambda v: values.cap("SES_EVENTS_MAX_AGE_SECONDS", v))
    raw_delivery: bool
    concurrency: int
    # The Go service's topic of SES identity notifications: bootstrap_aws subscribes the queue.
    notifications_topic_arn: str


@dataclass(frozen=True)
class ReputationConfig:
    """Counters, the rates and the guard (docs/reputation.md)."""

    PREFIX: ClassVar[str] = "REPUTATION_"
    stats_table: str = setting("STATS_TABLE")  # empty: nothing is counted
    stats_flush_seconds: float = setting("STATS_FLUSH_SECONDS")
    alert_webhook_url: str = setting("ALERT_WEBHOOK_URL")  # empty: no alert is posted
    window_hours: int
    min_volume: int
    warn_bounce_percent: float
    warn_complaint_percent: float
    act_bounce_percent: float
    act_complaint_percent: float
    slow_share: float = setting(parse=values.share)
    pause_wait_seconds: int


@dataclass(frozen=True)
class OpsConfig:
    """The periodic checks and the console's operations pages."""

    PREFIX: ClassVar[str] = "OPS_"
    dlq_check_seconds: int
    stuck_claims_seconds: int
    scan_max_items: int  # items one journal Scan may read
    template_check_hour: int = setting(parse=values.hour)
    dashboard_days: int
    audit_retention_days: int = setting("AUDIT_RETENTION_DAYS")  # 0: kept


@dataclass(frozen=True)
class ConsoleConfig:
    """The console's reads of the journal and of the template manifest."""

    # epoch seconds when the Go consumer stopped writing
    go_cutover: int | None = setting("JOURNAL_GO_CUTOVER", values.go_cutover)
    # lowercased; a context key containing one has its value masked
    sensitive_keys: tuple[str, ...] = setting("JOURNAL_SENSITIVE_KEYS", values.keys)
    template_variables_path: Path
    # the publish gate (docs/templates.md): caniemail's family.platform names; spamd's host:port
    template_check_clients: tuple[str, ...] = setting("TEMPLATE_CHECK_CLIENTS", values.clients)
    spamd_address: str = setting("SPAMD_ADDRESS", values.host_port)


@dataclass(frozen=True)
class ApiConfig:
    PREFIX: ClassVar[str] = "API_"
    max_recipients: int
    redis_url: str = setting("REDIS_URL")


@dataclass(frozen=True)
class WebhooksConfig:
    """Delivery webhooks (docs/webhooks.md)."""

    PREFIX: ClassVar[str] = "WEBHOOK_"
    # "durable" or "off"; empty is the default ("" meant off until webhooks were on by default);
    # "celery", the broker-only outbox's name, is read as "durable" (the broker is its wake-up)
    outbox: str = setting(
        parse=lambda v: values.choice(
            "WEBHOOK_OUTBOX", {"celery": "durable"}.get(v, v or "durable"), ("durable", "off")
        )
    )
    queue: str
    timeout_seconds: float
    failing_after: int
    max_in_flight: int
    max_per_minute: int
    rotation_overlap_hours: int
    allow_loopback: bool
    # the back-off's base: attempt n+1 waits about base * 2^(n-1), capped at 6 h, for 3 days
    retry_base_seconds: int = setting(
        parse=lambda v: values.positive("WEBHOOK_RETRY_BASE_SECONDS", v)
    )
    # The Fernet keys that seal the endpoints' secrets, the sealing one first (WEBHOOK_SECRET_KEYS,
    # then those derived from DJANGO_SECRET_KEY and its fallbacks); repr=False: never printed
    secret_keys: tuple[str, ...] = field(repr=False, metadata={"setting": "WEBHOOK_SECRET_KEYS"})

    @property
    def emitted(self) -> bool:
        """Whether webhook events are emitted at all (every outbox but ``off``)."""
        return self.outbox != "off"


@dataclass(frozen=True)
class PreferencesConfig:
    """The public one-click unsubscribe (docs/unsubscribe.md): where its links point, its limits."""

    PREFIX: ClassVar[str] = "UNSUBSCRIBE_"
    # "" = no links (and no List-Unsubscribe header); else https://host, no trailing slash
    public_base_url: str = setting("PUBLIC_BASE_URL", values.base_url)
    # requests a minute to /u/<token>: good tokens per address, bad ones per client; 0 = no limit
    rate_per_address: int = setting(parse=lambda v: values.cap("UNSUBSCRIBE_RATE_PER_ADDRESS", v))
    rate_per_client: int = setting(parse=lambda v: values.cap("UNSUBSCRIBE_RATE_PER_CLIENT", v))
    redis_url: str = setting("REDIS_URL")


@dataclass(frozen=True)
class Config:
    aws: AwsConfig
    sending: SendingConfig
    events: EventsConfig
    reputation: ReputationConfig
    ops: OpsConfig
    console: ConsoleConfig
    api: ApiConfig
    webhooks: WebhooksConfig
    preferences: PreferencesConfig

    SECTIONS: ClassVar[tuple[type, ...]] = (
        AwsConfig,
        SendingConfig,
        EventsConfig,
        ReputationConfig,
        OpsConfig,
        ConsoleConfig,
        ApiConfig,
        WebhooksConfig,
        PreferencesConfig,
    )

    @classmethod
    def from_settings(cls, settings: Any = None) -> Config:
        """Read and check; ImproperlyConfigured names the first malformed variable."""
        if settings is None:
            from django.conf import settings
        from_address, reply_to = values.sender(
            settings.EMAIL_SENDER, settings.EMAIL_REPLY_TO, settings.PENNSIEVE_DOMAIN
        )
        return cls(
            aws=_read(AwsConfig, settings),
            sending=_read(SendingConfig, settings, from_address=from_address, reply_to=reply_to),
            events=_read(EventsConfig, settings),
            reputation=_read(ReputationConfig, settings),
            ops=_read(OpsConfig, settings),
            console=_read(ConsoleConfig, settings),
            api=_read(ApiConfig, settings),
            webhooks=_read(
                WebhooksConfig,
                settings,
                secret_keys=values.webhook_secret_keys(
                    settings.WEBHOOK_SECRET_KEYS,
                    settings.SECRET_KEY,
                    settings.SECRET_KEY_FALLBACKS,
                ),
            ),
            preferences=_read(PreferencesConfig, settings),
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


def check_settings(**_: Any) -> list[CheckMessage]:
    """The sections as a Django system check (registered by the worker app), so ``manage.py
    check`` and the commands that run checks refuse a malformed value before they start (the
    consumers, which skip them, refuse it as they build their container)."""
    from django.core import checks  # here: emailops.settings imports this module

    try:
        Config.from_settings()
    except ImproperlyConfigured as exc:
        return [checks.Error(str(exc), id="emailops.E001")]
    return []
