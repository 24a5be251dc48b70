"""The composition root: adapters and the pipeline built from settings, for every process (the
consumer, the send API, the console's pages and jobs).

Each integration checks its own settings when first built and raises ImproperlyConfigured naming the
missing variable, so a misconfigured process fails at start-up, not on its first record.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from email.utils import formataddr, parseaddr
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from emailops.aws.clients import aws_client, lease_client, reset_clients
from emailops.aws.journal import DynamoJournal
from emailops.aws.mappings import DynamoMappingStore
from emailops.aws.s3 import S3TemplateStore
from emailops.aws.ses import SesSender
from emailops.aws.sqs import SqsQueue
from emailops.aws.stats import BufferedStats, DynamoStats
from emailops.aws.suppression import DynamoSuppressionList, SesAccountSuppression
from emailops.core.compose import Composer
from emailops.core.events import EventLog
from emailops.core.pipeline import EmailPipeline, PipelineSettings
from emailops.core.ports import JournalReader
from emailops.core.ratelimit import LocalBucketStore, QuotaRate, SharedRateLimiter
from emailops.core.rendering import Renderer
from emailops.core.suppression_index import IndexedSuppressionList
from emailops.core.template_cache import CachedMappingStore, CachedTemplateStore
from emailops.redis_rate import RedisBucketStore
from emailops.redis_suppression import RedisSuppressionIndex
from emailops.reputation_state import ReputationGate, ReputationState

# Imported where used: the consumer never needs them, and its start-up is measured (bench/startup.py).
if TYPE_CHECKING:
    from emailops.aws.erasure import RecipientEraser
    from emailops.aws.journal_events import DynamoEventJournal, DynamoUnmatchedEvents
    from emailops.aws.journal_scan import JournalScan
    from emailops.aws.journal_search import JournalSearch
    from emailops.aws.ses_account import SesAccountView
    from emailops.aws.ses_simulator import SimulatingSender
    from emailops.aws.sns_verify import SnsVerifier
    from emailops.core.delivery_handler import DeliveryEventHandler

__all__ = [
    "build_pipeline",
    "composer",
    "delivery_event_handler",
    "event_journal",
    "events_queue",
    "journal",
    "journal_scan",
    "journal_search",
    "lease_journal",
    "lease_queue",
    "mapping_store",
    "queue",
    "renderer",
    "reputation_gate",
    "reputation_state",
    "require",
    "reset",
    "send_rate_limiter",
    "sender",
    "sender_addresses",
    "ses_account_view",
    "sns_verifier",
    "stats",
    "suppression_list",
    "template_store",
    "unmatched_events",
]


def require(name: str) -> str:
    value = getattr(settings, name, "")
    if not value:
        raise ImproperlyConfigured(f"{name} is not set (see .env.example)")
    return value


def sender_addresses() -> tuple[str, tuple[str, ...]]:
    """(From, Reply-To): EMAIL_SENDER/EMAIL_REPLY_TO, else Pennsieve's support address."""
    if settings.EMAIL_SENDER:
        name, address = parseaddr(settings.EMAIL_SENDER)
        if "@" not in address:
            raise ImproperlyConfigured("EMAIL_SENDER must look like 'Display Name <address>'")
        reply_to = (settings.EMAIL_REPLY_TO,) if settings.EMAIL_REPLY_TO else ()
        # SES takes a non-ASCII display name only MIME-encoded; an ASCII one stays as written.
        return formataddr((name, address), charset="utf-8"), reply_to
    if settings.PENNSIEVE_DOMAIN:
        support = f"support@{settings.PENNSIEVE_DOMAIN}"
        return f"Pennsieve <{support}>", (settings.EMAIL_REPLY_TO or support,)
    raise ImproperlyConfigured("EMAIL_SENDER is not set (nor PENNSIEVE_DOMAIN to derive it from)")


def _client(service: str, *, sdk_retries: bool = True):
    return aws_client(service, region=settings.AWS_REGION, sdk_retries=sdk_retries)


@functools.cache
def renderer() -> Renderer:
    return Renderer()


@functools.cache
def mapping_store() -> DynamoMappingStore:
    return DynamoMappingStore(_client("dynamodb"), require("TEMPLATES_TABLE"))


@functools.cache
def journal() -> DynamoJournal:
    return DynamoJournal(_client("dynamodb"), require("JOURNAL_TABLE"))


def journal_reader() -> JournalReader:
    """Typed single-row reads for the console and the API: the journal adapter itself (not cached
    on its own, so nothing is added to ``reset``)."""
    return journal()


@functools.cache
def lease_journal() -> DynamoJournal:
    """The journal for the consumer's lease keeper: its own clients, short timeouts."""
    return DynamoJournal(
        lease_client("dynamodb", region=settings.AWS_REGION), require("JOURNAL_TABLE")
    )


@functools.cache
def lease_queue() -> SqsQueue:
    """The request queue for visibility changes (the keeper's, and hand-backs): short timeouts."""
    return SqsQueue(
        lease_client("sqs", region=settings.AWS_REGION), require("EMAIL_SERVICE_QUEUE_URL")
    )


@functools.cache
def journal_search() -> JournalSearch:
    from emailops.aws.journal_search import JournalSearch

    return JournalSearch(_client("dynamodb"), require("JOURNAL_TABLE"), go_rows_until=_go_cutover())


@functools.cache
def journal_scan() -> JournalScan:
    from emailops.aws.journal_scan import JournalScan

    return JournalScan(_client("dynamodb"), require("JOURNAL_TABLE"))


def _go_cutover() -> int | None:
    """JOURNAL_GO_CUTOVER as epoch seconds (a date or a time without a zone is UTC)."""
    if not settings.JOURNAL_GO_CUTOVER:
        return None
    try:
        moment = datetime.fromisoformat(settings.JOURNAL_GO_CUTOVER)
    except ValueError:
        raise ImproperlyConfigured(
            "JOURNAL_GO_CUTOVER must be an ISO date or time, e.g. 2026-12-01T09:00:00Z"
        ) from None
    return int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp())


def recipient_eraser() -> RecipientEraser:
    from emailops.aws.erasure import RecipientEraser

    return RecipientEraser(
        _client("dynamodb"),
        journal_table=require("JOURNAL_TABLE"),
        unmatched_table=settings.SES_EVENTS_UNMATCHED_TABLE,
    )


@functools.cache
def template_store() -> S3TemplateStore:
    client = aws_client(
        "s3", region=settings.AWS_REGION, s3_addressing_style=settings.AWS_S3_ADDRESSING_STYLE
    )
    return S3TemplateStore(require("S3_BUCKET"), client=client)


@functools.cache
def queue() -> SqsQueue:
    return SqsQueue(_client("sqs"), require("EMAIL_SERVICE_QUEUE_URL"))


@functools.cache
def sender() -> SesSender | SimulatingSender:
    # Sends are never repeated by botocore (see emailops.aws.clients._NO_RETRIES).
    ses = SesSender(
        _client("ses", sdk_retries=False), configuration_set=settings.SES_CONFIGURATION_SET
    )
    if not settings.SES_SIMULATE_EVENTS:
        return ses
    from emailops.aws.ses_simulator import SimulatingSender

    sns = _client("sns")
    topic_arn = sns.create_topic(Name=settings.SES_EVENTS_TOPIC_NAME)["TopicArn"]  # idempotent
    return SimulatingSender(ses, sns, topic_arn, configuration_set=settings.SES_CONFIGURATION_SET)


@functools.cache
def event_journal() -> DynamoEventJournal:
    from emailops.aws.journal_events import DynamoEventJournal

    return DynamoEventJournal(_client("dynamodb"), require("JOURNAL_TABLE"))


@functools.cache
def unmatched_events() -> DynamoUnmatchedEvents:
    from emailops.aws.journal_events import DynamoUnmatchedEvents

    return DynamoUnmatchedEvents(
        _client("dynamodb"),
        require("SES_EVENTS_UNMATCHED_TABLE"),
        ttl_seconds=settings.JOURNAL_TTL_DAYS * 86400,
    )


@functools.cache
def events_queue() -> SqsQueue:
    return SqsQueue(_client("sqs"), require("SES_EVENTS_QUEUE_URL"))


@functools.cache
def sns_verifier() -> SnsVerifier:
    from emailops.aws.sns_verify import SnsVerifier

    return SnsVerifier(
        verify_signatures=settings.SES_EVENTS_VERIFY_SIGNATURES,
        allowed_topics=settings.SES_EVENTS_TOPIC_ARNS,
        raw_delivery=settings.SES_EVENTS_RAW_DELIVERY,
    )


def delivery_event_handler() -> DeliveryEventHandler:
    from emailops.core.delivery_handler import DeliveryEventHandler

    return DeliveryEventHandler(
        journal=event_journal(),
        suppressions=suppression_list(),
        unmatched=unmatched_events(),
        verify=sns_verifier(),
        clock=time.time,
        stats=stats(),
    )


@functools.cache
def suppression_list() -> DynamoSuppressionList | IndexedSuppressionList:
    """The table, behind the Redis set of suppressed addresses (SUPPRESSION_INDEX_REDIS_KEY) for
    every reader and writer: the consumer's check, the events consumer's and the console's writes."""
    sync = (
        SesAccountSuppression(_client("sesv2")) if settings.SES_ACCOUNT_SUPPRESSION_SYNC else None
    )
    table = DynamoSuppressionList(
        _client("dynamodb"), require("SUPPRESSION_TABLE"), account_sync=sync
    )
    if not settings.SUPPRESSION_INDEX_REDIS_KEY:
        return table
    index = RedisSuppressionIndex.from_url(
        settings.REDIS_URL,
        key=settings.SUPPRESSION_INDEX_REDIS_KEY,
        max_age=settings.SUPPRESSION_INDEX_MAX_AGE_SECONDS,
    )
    return IndexedSuppressionList(table, index, clock=time.monotonic)


@functools.cache
def send_rate_limiter() -> SharedRateLimiter:
    """The SES send rate shared by every consumer: a bucket in Redis, a per-process one while
    Redis is unreachable. SES_MAX_SEND_RATE, else GetSendQuota's MaxSendRate (read now, so a
    consumer logs its rate at start-up, and every 5 minutes after)."""
    log = EventLog(logging.getLogger("emailops.ratelimit"))
    if settings.SES_MAX_SEND_RATE.strip():
        fixed = _send_rate_setting()
        log.info("ses.send_rate", max_rate=fixed, source="SES_MAX_SEND_RATE")
        max_rate = lambda: fixed  # noqa: E731
    else:
        max_rate = QuotaRate(lambda: sender().send_quota().max_send_rate, log=log)
        max_rate()
    return SharedRateLimiter(
        max_rate=max_rate,
        store=RedisBucketStore.from_url(settings.REDIS_URL, key=settings.SES_RATE_REDIS_KEY),
        fallback=LocalBucketStore(),
        log=log,
        pause_seconds=settings.SES_QUOTA_PAUSE_SECONDS,
        fallback_consumers=settings.SES_RATE_FALLBACK_CONSUMERS,
    )


@functools.cache
def stats() -> BufferedStats | None:
    """The reputation counters, summed in memory and written every STATS_FLUSH_SECONDS (the
    consumers flush on exit); None when STATS_TABLE is empty (nothing is counted)."""
    if not settings.STATS_TABLE:
        return None
    log = EventLog(logging.getLogger("emailops.stats"))
    table = DynamoStats(_client("dynamodb"), settings.STATS_TABLE, ttl_days=settings.STATS_TTL_DAYS)
    return BufferedStats(
        table,
        flush_seconds=settings.STATS_FLUSH_SECONDS,
        on_error=lambda exc: log.warning("stats.flush_failed", error=exc.describe()),
    )


def flush_stats() -> None:
    """Write the counts this process still holds (a consumer's exit, after an API send)."""
    counters = stats()
    if counters is not None:
        counters.flush()


def ses_account_view() -> SesAccountView:
    from emailops.aws.ses_account import SesAccountView

    return SesAccountView(_client("sesv2"), _client("cloudwatch"), _client("ses"))


@functools.cache
def reputation_state() -> ReputationState:
    return ReputationState.from_url(
        settings.REDIS_URL, key=f"{settings.SES_RATE_REDIS_KEY}:reputation"
    )


@functools.cache
def reputation_gate() -> ReputationGate:
    return ReputationGate(reputation_state(), refresh=settings.REPUTATION_REFRESH_SECONDS)


@functools.cache
def slow_rate_limiter() -> SharedRateLimiter:
    """The reduced rate normal-priority mail takes a slot of while the guard acts: a second
    bucket beside the main one, at REPUTATION_SLOW_SHARE of the send rate."""
    main = send_rate_limiter()
    share = settings.REPUTATION_SLOW_SHARE
    if not 0 < share <= 1:
        raise ImproperlyConfigured("REPUTATION_SLOW_SHARE must be a share of the rate in (0, 1]")
    return SharedRateLimiter(
        max_rate=lambda: main.max_rate() * share,
        store=RedisBucketStore.from_url(
            settings.REDIS_URL, key=f"{settings.SES_RATE_REDIS_KEY}:slow"
        ),
        fallback=LocalBucketStore(),
        log=EventLog(logging.getLogger("emailops.ratelimit")),
        fallback_consumers=settings.SES_RATE_FALLBACK_CONSUMERS,
    )


def _send_rate_setting() -> float:
    try:
        rate = float(settings.SES_MAX_SEND_RATE)
    except ValueError:
        rate = -1.0
    if not rate >= 0 or rate == float("inf"):
        raise ImproperlyConfigured(
            "SES_MAX_SEND_RATE must be emails per second (e.g. 14 or 0.5), 0 for no limit, "
            "or unset to use SES's MaxSendRate"
        )
    return rate


def composer(*, cache_seconds: float = 0) -> Composer:
    """Mapping + template + renderer; the consumer caches mappings and templates, the console
    never does (an edit there must show at once)."""
    mappings, templates = mapping_store(), template_store()
    if cache_seconds > 0:
        size = settings.TEMPLATE_CACHE_MAX_ENTRIES
        mappings = CachedMappingStore(mappings, seconds=cache_seconds, max_entries=size)
        templates = CachedTemplateStore(templates, seconds=cache_seconds, max_entries=size)
    return Composer(mappings=mappings, templates=templates, renderer=renderer())


def _parallel(pool: ThreadPoolExecutor) -> Callable[[Callable, Sequence], list]:
    """Recipients of one request on their own pool (a record's worker waits for them, so they
    cannot share its pool); a single recipient stays on the record's thread."""

    def fan_out(fn: Callable, items: Sequence) -> list:
        return list(pool.map(fn, items)) if len(items) > 1 else [fn(item) for item in items]

    return fan_out


def build_pipeline(*, lease_seconds: int, recipient_threads: int = 0) -> EmailPipeline:
    """claim → send → mark, wired from settings: the one pipeline of the consumer and the API."""
    from_address, reply_to = sender_addresses()
    extra = {}
    if recipient_threads > 1:
        pool = ThreadPoolExecutor(recipient_threads, thread_name_prefix="recipient")
        extra["fan_out"] = _parallel(pool)
    return EmailPipeline(
        composer=composer(cache_seconds=settings.TEMPLATE_CACHE_SECONDS),
        journal=journal(),
        sender=sender(),
        suppressions=suppression_list(),
        rate_limiter=send_rate_limiter(),
        stats=stats(),
        gate=reputation_gate(),
        slow_limiter=slow_rate_limiter(),
        settings=PipelineSettings(
            from_address=from_address,
            reply_to=reply_to,
            lease_seconds=lease_seconds,
            ttl_days=settings.JOURNAL_TTL_DAYS,
            retry_max_seconds=settings.RETRY_MAX_SECONDS,
            claim_send_margin_seconds=settings.CLAIM_SEND_MARGIN_SECONDS,
            pause_wait_seconds=settings.REPUTATION_PAUSE_WAIT_SECONDS,
        ),
        **extra,
    )


def reset() -> None:
    """Forget built adapters (tests change settings between cases)."""
    factories = (
        renderer,
        mapping_store,
        journal,
        lease_journal,
        lease_queue,
        journal_search,
        journal_scan,
        template_store,
        queue,
        sender,
        suppression_list,
        event_journal,
        unmatched_events,
        events_queue,
        sns_verifier,
        send_rate_limiter,
        stats,
        reputation_state,
        reputation_gate,
        slow_rate_limiter,
    )
    for factory in factories:
        factory.cache_clear()
    reset_clients()
