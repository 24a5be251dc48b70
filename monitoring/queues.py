"""The request queue's dead-letter queue, found from its RedrivePolicy: the depth check reads it,
and the console's dead-letter jobs list, redrive and erase from it."""

from __future__ import annotations

from emailops.aws.sqs import SqsQueue
from emailops.core.errors import ConfigurationError

__all__ = ["dead_letter_queues"]


def dead_letter_queues(*, queue: SqsQueue) -> tuple[SqsQueue, SqsQueue]:
    """(source, dead-letter) for the request queue ``queue`` (EMAIL_SERVICE_QUEUE_URL), from its
    RedrivePolicy."""
    source = queue
    dead_letter_url = source.describe().dead_letter_url
    if not dead_letter_url:
        raise ConfigurationError(
            "find dead-letter queue",
            key=source.url,
            reason="the queue has no RedrivePolicy (`manage.py bootstrap_aws` adds one)",
        )
    return source, SqsQueue(source.client, dead_letter_url)
