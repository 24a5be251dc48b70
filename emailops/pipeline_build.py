"""The pipeline as the container assembles it (``Container.build_pipeline`` and ``composer``): the
composer with or without caches, the recipients' own pool, and the pipeline's settings read from
the typed config. Beside the container so that it stays the list of adapters."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from emailops.config import Config
from emailops.core.compose import Composer
from emailops.core.pipeline import EmailPipeline, PipelineSettings
from emailops.core.template_cache import CachedMappingStore, CachedTemplateStore

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = ["build_composer", "build_pipeline", "pipeline_settings"]


def build_composer(adapters: Container, *, cache_seconds: float = 0) -> Composer:
    """Mapping + template + renderer; the consumer caches mappings and templates, the console
    never does (an edit there must show at once)."""
    mappings, templates = adapters.mapping_store, adapters.template_store
    if cache_seconds > 0:
        mappings = CachedMappingStore(mappings, seconds=cache_seconds, lock=threading.Lock())
        templates = CachedTemplateStore(templates, seconds=cache_seconds, lock=threading.Lock())
    return Composer(mappings=mappings, templates=templates, renderer=adapters.renderer)


def pipeline_settings(config: Config, *, lease_seconds: int) -> PipelineSettings:
    """The pipeline's numbers: the sender, the claim lease, the retry budget, the pause wait."""
    sending = config.sending
    from_address, reply_to = sending.addresses()
    return PipelineSettings(
        from_address=from_address,
        reply_to=reply_to,
        lease_seconds=lease_seconds,
        ttl_days=sending.journal_ttl_days,
        retry_max_seconds=sending.retry_max_seconds,
        claim_send_margin_seconds=sending.claim_send_margin_seconds,
        pause_wait_seconds=config.reputation.pause_wait_seconds,
        send_enabled=sending.send_enabled,
    )


def build_pipeline(
    adapters: Container, *, lease_seconds: int, recipient_threads: int = 0
) -> EmailPipeline:
    """claim → send → mark: the one pipeline of the consumer and the API."""
    settings = pipeline_settings(adapters.config, lease_seconds=lease_seconds)
    extra = {}
    if recipient_threads > 1:
        pool = ThreadPoolExecutor(recipient_threads, thread_name_prefix="recipient")
        extra["fan_out"] = _parallel(pool)
    cache_seconds = adapters.config.sending.template_cache_seconds
    return EmailPipeline(
        composer=build_composer(adapters, cache_seconds=cache_seconds),
        journal=adapters.journal,
        sender=adapters.sender,
        suppressions=adapters.suppression_list,
        preferences=adapters.cached_preference_store,
        unsubscribe_links=adapters.unsubscribe_links,
        tombstones=adapters.tombstones,
        rate_limiter=adapters.send_rate_limiter,
        stats=adapters.stats,
        gate=adapters.reputation_gate,
        send_switch=adapters.send_stop,
        slow_limiter=adapters.slow_rate_limiter,
        send_guard=adapters.send_guard,
        settings=settings,
        outbox=adapters.webhook_outbox,
        **extra,
    )


def _parallel(pool: ThreadPoolExecutor) -> Callable[[Callable, Sequence], list]:
    """Recipients of one request on their own pool (a record's worker waits for them, so they
    cannot share its pool); a single recipient stays on the record's thread."""

    def fan_out(fn: Callable, items: Sequence) -> list:
        return list(pool.map(fn, items)) if len(items) > 1 else [fn(item) for item in items]

    return fan_out
