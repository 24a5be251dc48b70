"""Build the consumer from settings: adapters, pipeline, queue facts read once at start-up."""

from __future__ import annotations

import logging

from django.conf import settings

from emailops import wiring
from emailops.core.events import EventLog
from emailops.core.pipeline import EmailPipeline, PipelineSettings
from worker.consumer import Consumer

__all__ = ["build_consumer", "build_pipeline"]

logger = logging.getLogger("worker.wiring")


def build_pipeline(*, lease_seconds: int) -> EmailPipeline:
    from_address, reply_to = wiring.sender_addresses()
    return EmailPipeline(
        composer=wiring.composer(cache_seconds=settings.TEMPLATE_CACHE_SECONDS),
        journal=wiring.journal(),
        sender=wiring.sender(),
        settings=PipelineSettings(
            from_address=from_address,
            reply_to=reply_to,
            lease_seconds=lease_seconds,
            ttl_days=settings.JOURNAL_TTL_DAYS,
        ),
    )


def build_consumer() -> Consumer:
    """Check settings, read the queue's visibility timeout and DLQ, and wire everything."""
    wiring.sender_addresses()  # fail fast, before touching AWS
    for name in ("EMAIL_SERVICE_QUEUE_URL", "TEMPLATES_TABLE", "JOURNAL_TABLE", "S3_BUCKET"):
        wiring.require(name)
    queue = wiring.queue()
    info = queue.describe()
    lease = settings.CLAIM_LEASE_SECONDS or info.visibility_timeout
    log = EventLog(logger)
    if info.dead_letter_url is None:
        log.warning(
            "queue.no_dead_letter_queue",
            queue=queue.url,
            consequence="permanent failures stay on the queue",
        )
    log.info(
        "consumer.configured",
        queue=queue.url,
        leaseSeconds=lease,
        deadLetterQueue=info.dead_letter_url,
        maxReceiveCount=info.max_receive_count,
    )
    return Consumer(
        queue=queue,
        pipeline=build_pipeline(lease_seconds=lease),
        dead_letter_url=info.dead_letter_url,
        backoff_base=settings.RETRY_BACKOFF_BASE_SECONDS,
        backoff_cap=settings.RETRY_BACKOFF_CAP_SECONDS,
    )
