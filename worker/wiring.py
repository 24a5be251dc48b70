"""Build the consumer from the container (emailops.container): the pipeline, the queue's facts read
once at start-up, the claim lease (the container's LeasePolicy, every reader's) and the consumer's
own settings. Here, not in the container, because the container sits below the worker and may not
import ``Consumer`` (tests/test_architecture.py).
Every adapter is the container's; this module adds only what the consumer reads at start-up. The
consumer runs on a container of its own, the one it is handed with its connection pools sized to
its threads (``Container.with_connections``); the process's container is left as it was."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from django.core.exceptions import ImproperlyConfigured

from emailops.capabilities import UNSUBSCRIBE_LINKS, WEBHOOKS, report_off
from emailops.core.events import EventLog
from emailops.core.retry import RetryPolicy
from emailops.queue_state import state_seal
from worker.consumer import Consumer, ConsumerSettings

if TYPE_CHECKING:
    from emailops.config import Config
    from emailops.container import Container

__all__ = ["build_consumer", "retry_policy"]

logger = logging.getLogger("worker.wiring")


def retry_policy(config: Config) -> RetryPolicy:
    """RETRY_BACKOFF_BASE_SECONDS, RETRY_BACKOFF_CAP_SECONDS and RETRY_MAX_SECONDS, for both
    consumers."""
    sending = config.sending
    return RetryPolicy(
        backoff_base=sending.retry_backoff_base_seconds,
        backoff_cap=sending.retry_backoff_cap_seconds,
        max_seconds=sending.retry_max_seconds,
    )


def build_consumer(
    *,
    adapters: Container,
    concurrency: int,
    stop_timeout: float = 25.0,
    allow_no_dead_letter_queue: bool = False,
) -> Consumer:
    """Check settings, read the queue's visibility timeout and DLQ, and wire everything, on a
    container of ``adapters``' config whose clients pool a connection per thread."""
    adapters.config.check_sending()  # fail fast, before touching AWS
    # One pooled connection per thread that may call AWS at once: workers, recipients, receivers.
    built = adapters.with_connections(2 * concurrency + 8)
    sending = built.config.sending
    queue = built.queue
    info = built.queue_info()
    lease = built.lease_policy.seconds  # the one every reader judges our claims and Go's by
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
        retryMaxSeconds=sending.retry_max_seconds,
    )
    report_off(built.config, WEBHOOKS, UNSUBSCRIBE_LINKS, process="consumer")
    built.send_rate_limiter.max_rate()  # logs the rate in force (GetSendQuota unless set)
    return Consumer(
        queue=queue,
        lease_queue=built.lease_queue,
        lease_journal=built.lease_journal,
        seal=state_seal(),
        pipeline=built.build_pipeline(lease_seconds=lease, recipient_threads=concurrency),
        settings=ConsumerSettings(
            concurrency=concurrency,
            visibility_seconds=info.visibility_timeout,
            lease_seconds=lease,
            dead_letter_url=info.dead_letter_url,
            max_receive_count=info.max_receive_count,
            retry=retry_policy(built.config),
            stop_timeout=stop_timeout,
        ),
    )
