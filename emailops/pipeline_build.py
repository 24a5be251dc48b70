"""The pipeline as the container assembles it (``Container.build_pipeline`` and ``composer``): the
composer with or without caches, the send-policy chain (``send_policies``, the one place its order
is written), the recipients' own pool and the policy walks' pool, and the pipeline's settings read
from the typed config. Beside the container so that it stays the list of adapters."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from emailops.config import Config
from emailops.core.compose import Composer
from emailops.core.erasure import Tombstones
from emailops.core.pipeline import EmailPipeline, PipelineSettings
from emailops.core.pipeline_model import NoStats, Unpaced
from emailops.core.policies.emergency_stop import EmergencyStop
from emailops.core.policies.reputation_pause import ReputationPause
from emailops.core.policies.send_guard import SendGuardCheck
from emailops.core.policies.service_stop import ServiceStop
from emailops.core.policies.suppression import Suppression
from emailops.core.policies.template_off import TemplateOff
from emailops.core.policies.unsubscribed import Unsubscribed
from emailops.core.ports import (
    Journal,
    MappingStore,
    ReputationGate,
    Sender,
    SendGuard,
    SendRateLimiter,
    SendSwitch,
    Stats,
    SuppressionList,
    TemplateStore,
)
from emailops.core.preferences import PreferenceStore, UnsubscribeLinks
from emailops.core.rendering import Renderer
from emailops.core.send_policy import SendPolicy
from emailops.core.template_cache import CachedMappingStore, CachedTemplateStore
from emailops.core.webhooks import WebhookOutbox

__all__ = [
    "PipelineAdapters",
    "build_composer",
    "build_pipeline",
    "pipeline_settings",
    "send_policies",
]


class PipelineAdapters(Protocol):
    """What the pipeline is built from: the container's adapters (``emailops.container``), named
    here rather than imported, so the container may build pipelines without a circle."""

    config: Config
    mapping_store: MappingStore
    template_store: TemplateStore
    renderer: Renderer
    journal: Journal
    sender: Sender
    tombstones: Tombstones
    unsubscribe_links: UnsubscribeLinks
    send_rate_limiter: SendRateLimiter
    slow_rate_limiter: SendRateLimiter | None
    reputation_gate: ReputationGate | None
    send_stop: SendSwitch | None
    suppression_list: SuppressionList
    cached_preference_store: PreferenceStore | None
    send_guard: SendGuard | None
    stats: Stats | None
    webhook_outbox: WebhookOutbox


def build_composer(adapters: PipelineAdapters, *, cache_seconds: float = 0) -> Composer:
    """Mapping + template + renderer; the consumer caches mappings and templates, the console
    never does (an edit there must show at once)."""
    mappings, templates = adapters.mapping_store, adapters.template_store
    if cache_seconds > 0:
        mappings = CachedMappingStore(mappings, seconds=cache_seconds, lock=threading.Lock())
        templates = CachedTemplateStore(templates, seconds=cache_seconds, lock=threading.Lock())
    return Composer(mappings=mappings, templates=templates, renderer=adapters.renderer)


def send_policies(
    *,
    gate: ReputationGate | None = None,
    slow_limiter: SendRateLimiter | None = None,
    pause_wait_seconds: int = 60,
    send_enabled: bool = True,
    send_switch: SendSwitch | None = None,
    suppressions: SuppressionList | None = None,
    preferences: PreferenceStore | None = None,
    send_guard: SendGuard | None = None,
) -> tuple[SendPolicy, ...]:
    """The send-policy chain in the order the pipeline asks it (docs/pipeline.md), the Go
    service's order: the reputation pause (per record), then per recipient the send controls
    (SEND_ENABLED, the emergency stop, the template's SendDisabled), the suppression list, the
    recipient's preferences, and last, after the recipient's copy is made, the send guard.
    What is not given is off, and not in the chain."""
    # The reputation guard's reduced rate, which normal mail takes a slot of while it acts.
    slow = Unpaced() if slow_limiter is None else slow_limiter
    chain: list[SendPolicy | None] = [
        None if gate is None else ReputationPause(gate, slow, pause_wait_seconds),
        None if send_enabled else ServiceStop(),
        EmergencyStop(send_switch) if send_switch is not None else None,
        TemplateOff(),
        Suppression(suppressions) if suppressions is not None else None,
        Unsubscribed(preferences) if preferences is not None else None,
        SendGuardCheck(send_guard) if send_guard is not None else None,
    ]
    return tuple(policy for policy in chain if policy is not None)


def pipeline_settings(config: Config, *, lease_seconds: int) -> PipelineSettings:
    """The pipeline's numbers: the sender, the claim lease, the retry budget."""
    sending = config.sending
    from_address, reply_to = sending.addresses()
    return PipelineSettings(
        from_address=from_address,
        reply_to=reply_to,
        lease_seconds=lease_seconds,
        ttl_days=sending.journal_ttl_days,
        retry_max_seconds=sending.retry_max_seconds,
        claim_send_margin_seconds=sending.claim_send_margin_seconds,
    )


def build_pipeline(
    adapters: PipelineAdapters, *, lease_seconds: int, recipient_threads: int = 0
) -> EmailPipeline:
    """claim → policies → send → mark: the one pipeline of the consumer and the API."""
    config = adapters.config
    settings = pipeline_settings(config, lease_seconds=lease_seconds)
    extra = {}
    if recipient_threads > 1:
        pool = ThreadPoolExecutor(recipient_threads, thread_name_prefix="recipient")
        extra["fan_out"] = _parallel(pool)
        # A recipient's two independent policy walks side by side: leaf calls on a pool of
        # their own (they wait on nothing), so neither pool can wait on itself.
        checks = ThreadPoolExecutor(recipient_threads, thread_name_prefix="policy")
        extra["alongside"] = _alongside(checks)
    policies = send_policies(
        gate=adapters.reputation_gate,
        slow_limiter=adapters.slow_rate_limiter,
        pause_wait_seconds=config.reputation.pause_wait_seconds,
        send_enabled=config.sending.send_enabled,
        send_switch=adapters.send_stop,
        suppressions=adapters.suppression_list,
        preferences=adapters.cached_preference_store,
        send_guard=adapters.send_guard,  # None without RATE_LIMIT_TABLE
    )
    stats = adapters.stats  # None without STATS_TABLE
    return EmailPipeline(
        composer=build_composer(adapters, cache_seconds=config.sending.template_cache_seconds),
        journal=adapters.journal,
        sender=adapters.sender,
        settings=settings,
        policies=policies,
        tombstones=adapters.tombstones,
        unsubscribe_links=adapters.unsubscribe_links,
        rate_limiter=adapters.send_rate_limiter,
        stats=NoStats() if stats is None else stats,
        outbox=adapters.webhook_outbox,
        **extra,
    )


def _alongside(pool: ThreadPoolExecutor) -> Callable[[Callable, Callable], tuple]:
    """The second on the pool, the first on the caller's thread; both answered (or raised)
    before it returns, so nothing of a recipient runs on after its walk."""

    def alongside(first: Callable, second: Callable) -> tuple:
        later = pool.submit(second)
        try:
            answer = first()
        finally:
            other = later.result()
        return answer, other

    return alongside


def _parallel(pool: ThreadPoolExecutor) -> Callable[[Callable, Sequence], list]:
    """Recipients of one request on their own pool (a record's worker waits for them, so they
    cannot share its pool); a single recipient stays on the record's thread."""

    def fan_out(fn: Callable, items: Sequence) -> list:
        return list(pool.map(fn, items)) if len(items) > 1 else [fn(item) for item in items]

    return fan_out
