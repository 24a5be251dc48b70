"""Celery tasks: thin wrappers that call the same consumer as `manage.py consume_emails`.

``consume_emails_batch`` drains the queue once (for Celery beat, instead of a long-running
consumer process); ``enqueue_email_request`` lets web requests hand queueing off to a worker.
"""

from __future__ import annotations

import threading
from dataclasses import asdict

from celery import shared_task
from django.conf import settings

from emailops import wiring
from emailops.core.contract import parse_request
from worker.wiring import build_consumer


@shared_task(name="worker.consume_emails_batch")
def consume_emails_batch(max_messages: int = 100) -> dict[str, int]:
    """Process up to ``max_messages`` queued requests, then return the consumer's counts."""
    stats = build_consumer(concurrency=settings.CONSUMER_CONCURRENCY).run(
        stop=threading.Event(), until_empty=True, max_messages=max_messages, wait_time=0
    )
    return asdict(stats)


@shared_task(name="worker.enqueue_email_request")
def enqueue_email_request(body: str) -> str:
    """Validate an EmailRequest body and put it on the queue; returns the SQS message id."""
    parse_request(body)  # a bad request fails here, loudly, not in the consumer later
    return wiring.queue().send(body)
