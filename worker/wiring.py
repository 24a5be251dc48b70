"""Build the consumer from settings: the pipeline (from the composition root, emailops.wiring),
the queue's facts read once at start-up, and the consumer's own settings."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from emailops import wiring
from emailops.aws.clients import size_connection_pools
from emailops.core.events import EventLog
from emailops.core.retry import RetryPolicy
from worker.consumer import Consumer, ConsumerSettings

__all__ = ["build_consumer", "retry_policy"]

logger = logging.getLogger("worker.wiring")


def retry_policy() -> RetryPolicy:
    """RETRY_BACKOFF_BASE_SECONDS, RETRY_BACKOFF_CAP_SECONDS and RETRY_MAX_SECONDS, for both
    consumers."""
    return RetryPolicy(
        backoff_base=settings.RETRY_BACKOFF_BASE_SECONDS,
        backoff_cap=settings.RETRY_BACKOFF_CAP_SECONDS,
        max_seconds=settings.RETRY_MAX_SECONDS,
    )


def build_consumer(
    *, concurrency: int, stop_timeout: float = 25.0, allow_no_dead_letter_queue: bool = False
) -> Consumer:
    """Check settings, read the queue's visibility timeout and DLQ, and wire everything."""
    wiring.sender_addresses()  # fail fast, before touching AWS
    for name in ("EMAIL_SERVICE_QUEUE_URL", "TEMPLATES_TABLE", "JOURNAL_TABLE", "S3_BUCKET"):
        wiring.require(name)
    # One pooled connection per thread that may call AWS at once: workers, recipients, receivers.
    size_connection_pools(2 * concurrency + 8)
    wiring.reset()
    queue = wiring.queue()
    info = queue.describe()
    lease = settings.CLAIM_LEASE_SECONDS or info.visibility_timeout
    log = EventLog(logger)
    if info.dead_letter_url is None and not allow_no_dead_letter_queue:
        raise ImproperlyConfigured(
            f"the queue {queue.url} has no dead-letter queue (RedrivePolicy): requests that can "
            "never be sent would have nowhere to go. Give it one (manage.py bootstrap_aws does), "
            "or pass --allow-no-dead-letter-queue to keep them on the queue instead."
        )
    log.info(
        "consumer.configured",
        queue=queue.url,
        concurrency=concurrency,
        leaseSeconds=lease,
        visibilityTimeout=info.visibility_timeout,
        deadLetterQueue=info.dead_letter_url,
        maxReceiveCount=info.max_receive_count,
        retryMaxSeconds=settings.RETRY_MAX_SECONDS,
    )
    return Consumer(
        queue=queue,
        lease_queue=wiring.lease_queue(),
        lease_journal=wiring.lease_journal(),
        pipeline=wiring.build_pipeline(lease_seconds=lease, recipient_threads=concurrency),
        settings=ConsumerSettings(
            concurrency=concurrency,
            visibility_seconds=info.visibility_timeout,
            lease_seconds=lease,
            dead_letter_url=info.dead_letter_url,
            max_receive_count=info.max_receive_count,
            retry=retry_policy(),
            stop_timeout=stop_timeout,
        ),
    )
