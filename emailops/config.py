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
from datetime import UTC, datetime
from email.utils import formataddr, parseaddr
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from django.core.exceptions import ImproperlyConfigured

from emailops.core.header_text import control_problem

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
    "https_mode",
    "require",
    "setting",
    "setting_name",
    "strong_secret_key",
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
    values = dict(computed)
    for item in fields(section):  # type: ignore[arg-type]
        if item.name in values:
            continue
        parse = item.metadata.get("parse")
        value = getattr(settings, setting_name(section, item))
        values[item.name] = parse(value) if parse else value
    return section(**values)


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
    suppression_index_key: str = setting("SUPPRESSION_INDEX_REDIS_KEY")
    # None: SES's MaxSendRate; 0: no limit
    max_send_rate: float | None = setting("SES_MAX_SEND_RATE", lambda v: _send_rate(v))
    quota_pause_seconds: int = setting("SES_QUOTA_PAUSE_SECONDS")
    rate_redis_key: str = setting("SES_RATE_REDIS_KEY")
    rate_fallback_consumers: int = setting("SES_RATE_FALLBACK_CONSUMERS")
    configuration_set: str = setting("SES_CONFIGURATION_SET")
    simulate_events: bool = setting("SES_SIMULATE_EVENTS")
    account_suppression_sync: bool = setting("SES_ACCOUNT_SUPPRESSION_SYNC")
    # The send guard (emailops.core.send_guard); an empty table: no guard.
    send_enabled: bool = setting("SEND_ENABLED")
    rate_limit_table: str = setting("RATE_LIMIT_TABLE")
    send_rate_limit_per_minute: int = setting(parse=lambda v: _cap("SEND_RATE_LIMIT_PER_MINUTE", v))
    per_message_rate_limit_per_minute: int = setting(
        parse=lambda v: _cap("PER_MESSAGE_RATE_LIMIT_PER_MINUTE", v)
    )
    rate_safeguard_over_cap: str = setting(parse=lambda v: _over_cap(v))
    rate_safeguard_hold_max_seconds: int = setting(
        parse=lambda v: _cap("RATE_SAFEGUARD_HOLD_MAX_SECONDS", v)
    )
    loop_limit_per_hour: int = setting(parse=lambda v: _cap("LOOP_LIMIT_PER_HOUR", v))
    # Recipient preferences (emailops.core.preferences): how long the consumer caches them (the
    # links' public address is PreferencesConfig's).
    preferences_cache_seconds: int = setting(parse=lambda v: _cap("PREFERENCES_CACHE_SECONDS", v))

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

    PREFIX: ClassVar[str] = "SES_EVENTS_"
    queue_url: str
    unmatched_table: str
    topic_name: str
    topic_arns: tuple[str, ...] = setting(parse=tuple)
    verify_signatures: bool
    # How old a signed SNS message may be (0: any age); checked only with signatures verified.
    max_age_seconds: int = setting(parse=lambda v: _cap("SES_EVENTS_MAX_AGE_SECONDS", v))
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
    slow_share: float = setting(parse=lambda v: _share(v))
    pause_wait_seconds: int


@dataclass(frozen=True)
class OpsConfig:
    """The periodic checks and the console's operations pages."""

    PREFIX: ClassVar[str] = "OPS_"
    dlq_check_seconds: int
    stuck_claims_seconds: int
    scan_max_items: int  # items one journal Scan may read
    template_check_hour: int = setting(parse=lambda v: _hour(v))
    dashboard_days: int
    audit_retention_days: int = setting("AUDIT_RETENTION_DAYS")  # 0: kept


@dataclass(frozen=True)
class ConsoleConfig:
    """The console's reads of the journal and of the template manifest."""

    # epoch seconds when the Go consumer stopped writing
    go_cutover: int | None = setting("JOURNAL_GO_CUTOVER", lambda v: _go_cutover(v))
    # lowercased; a context key containing one has its value masked
    sensitive_keys: tuple[str, ...] = setting("JOURNAL_SENSITIVE_KEYS", lambda v: _keys(v))
    template_variables_path: Path


@dataclass(frozen=True)
class ApiConfig:
    PREFIX: ClassVar[str] = "API_"
    max_recipients: int
    redis_url: str = setting("REDIS_URL")


@dataclass(frozen=True)
class WebhooksConfig:
    """Delivery webhooks (docs/webhooks.md)."""

    PREFIX: ClassVar[str] = "WEBHOOK_"
    # "celery" or "off"; empty is the default ("" meant off until webhooks were on by default)
    outbox: str = setting(
        parse=lambda v: _choice("WEBHOOK_OUTBOX", v or "celery", ("celery", "off"))
    )
    queue: str
    timeout_seconds: float
    failing_after: int
    max_in_flight: int
    max_per_minute: int
    rotation_overlap_hours: int
    allow_loopback: bool


@dataclass(frozen=True)
class PreferencesConfig:
    """The public one-click unsubscribe (docs/unsubscribe.md): where its links point, its limits."""

    PREFIX: ClassVar[str] = "UNSUBSCRIBE_"
    # "" = no links (and no List-Unsubscribe header); else https://host, no trailing slash
    public_base_url: str = setting("PUBLIC_BASE_URL", lambda v: _base_url(v))
    # requests a minute to /u/<token>: good tokens per address, bad ones per client; 0 = no limit
    rate_per_address: int = setting(parse=lambda v: _cap("UNSUBSCRIBE_RATE_PER_ADDRESS", v))
    rate_per_client: int = setting(parse=lambda v: _cap("UNSUBSCRIBE_RATE_PER_CLIENT", v))
    redis_url: str = setting("REDIS_URL")


def _base_url(value: str) -> str:
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


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ImproperlyConfigured(f"{name} must be one of {allowed!r}, not {value!r}")
    return value


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
        from_address, reply_to = _sender(
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
            webhooks=_read(WebhooksConfig, settings),
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


def _sender(sender: str, reply_to: str, domain: str) -> tuple[str, tuple[str, ...]]:
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


def _cap(name: str, value: int) -> int:
    if value < 0:
        raise ImproperlyConfigured(f"{name} must be 0 (off) or a positive whole number")
    return value


def _over_cap(value: str) -> str:
    choice = value.strip().lower()
    if choice not in ("hold", "log-only"):
        raise ImproperlyConfigured("RATE_SAFEGUARD_OVER_CAP must be hold or log-only")
    return choice


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


def _hour(hour: int) -> int:
    if not 0 <= hour <= 23:
        raise ImproperlyConfigured(
            "OPS_TEMPLATE_CHECK_HOUR must be an hour of the day, 0 to 23 (UTC)"
        )
    return hour


def _keys(keys: list[str]) -> tuple[str, ...]:
    return tuple(key.strip().lower() for key in keys if key.strip())


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
