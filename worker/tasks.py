"""Celery tasks: thin wrappers that take ids and call services. Each task is an entry: it takes
the process's container (``container.current()``) once and passes it, or the adapters needed,
down (``adapters=``, ``queue=``, ``journal_reader=``); nothing below reaches for it.

``consume_emails_batch`` drains the queue once (for Celery beat, instead of a long-running
consumer process); ``enqueue_email_request`` lets web requests hand queueing off to a worker;
``run_job`` runs a job (redrive, bulk resend, template check...) by its id; the
``check_*``/``find_*`` tasks are Celery beat's periodic checks, and ``prune_audit_trails`` its daily
retention of the audit trails (schedule in emailops/celery.py). The tasks call the capabilities'
own apps (``jobs``, ``monitoring``, ``webhooks``, ``audit``), never the console: work the console
owns (the job kinds, the template check, the reputation guard) it registers with them by name.
A worker on the webhook queue records that it is there (``webhook_heartbeat``, and at its start)
for ``webhooks add``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import asdict

from celery import shared_task
from celery.signals import worker_ready
from django.db import DatabaseError, OperationalError
from django.utils import timezone

from audit import retention
from emailops import container
from emailops.capabilities import WEBHOOKS, report_off
from emailops.core.contract import parse_request
from jobs import engine
from monitoring import checks, periodic
from webhooks import delivery as webhook_delivery
from webhooks import liveness as webhook_liveness
from webhooks import outbox as webhook_outbox
from worker.wiring import build_consumer


@shared_task(name="worker.consume_emails_batch")
def consume_emails_batch(max_messages: int = 100) -> dict[str, int]:
    """Process up to ``max_messages`` queued requests, then return the consumer's counts."""
    adapters = container.current()  # the consumer runs on its own, sized copy of it
    concurrency = adapters.config.sending.consumer_concurrency
    stats = build_consumer(adapters=adapters, concurrency=concurrency).run(
        stop=threading.Event(), until_empty=True, max_messages=max_messages, wait_time=0
    )
    return asdict(stats)


@shared_task(name="worker.enqueue_email_request")
def enqueue_email_request(body: str) -> str:
    """Validate an EmailRequest body and put it on the queue; returns the SQS message id."""
    parse_request(body)  # a bad request fails here, loudly, not in the consumer later
    return container.current().queue.send(body)


# A database hiccup (a dropped connection, a lock) before the job is claimed would leave it
# PENDING: the task is delivered again shortly instead; job_run is safe to deliver twice.
@shared_task(
    name=engine.RUN_JOB_TASK,
    autoretry_for=(OperationalError,),
    retry_backoff=1,
    retry_backoff_max=10,
    retry_jitter=False,
    max_retries=5,
)
def run_job(job_id: int) -> str:
    """Run (or resume) a job; safe to deliver twice. Returns the state it ended in."""
    return engine.job_run(job_id=job_id, adapters=container.current()).state


@shared_task(name="worker.check_dead_letter_depth")
def check_dead_letter_depth() -> int:
    return checks.dead_letter_depth_check(queue=container.current().queue)["depth"]


@shared_task(name="worker.find_stuck_claims")
def find_stuck_claims() -> int:
    return checks.stuck_claims_check(adapters=container.current())["count"]


@shared_task(name="worker.check_templates_daily")
def check_templates_daily() -> int:
    """The console's template check, in the system's name (registered by the console)."""
    return periodic.run("template_check_daily", adapters=container.current()).pk


@shared_task(name="worker.prune_audit_trails")
def prune_audit_trails() -> dict[str, int]:
    return retention.audit_prune(adapters=container.current())


@shared_task(name="worker.evaluate_reputation")
def evaluate_reputation() -> list[str]:
    """Judge the bounce and complaint rates; set or lift the guard's automatic pauses."""
    return periodic.run("reputation", adapters=container.current())["warnings"]


@shared_task(name="worker.webhook_fan_out")
def webhook_fan_out(event: dict) -> list[int]:
    """The wake-up for one event in the durable outbox: a delivery per matching endpoint, each
    attempted by its task, then the outbox item deleted (a failure leaves it for the sweep)."""
    adapters = container.current()
    queue = adapters.config.webhooks.queue
    return webhook_outbox.outbox_fan_out(
        event,
        journal_reader=adapters.journal_reader,
        store=adapters.webhook_outbox_store,
        schedule=lambda ids: _schedule(ids, queue=queue),
    )


@shared_task(name="worker.webhook_outbox_sweep")
def webhook_outbox_sweep() -> int:
    """Fan out the durable outbox's events no wake-up took (``webhook_outbox.outbox_sweep``)."""
    adapters = container.current()
    store = adapters.webhook_outbox_store
    if store is None:  # WEBHOOK_OUTBOX=off
        return 0
    queue = adapters.config.webhooks.queue
    ids = webhook_outbox.outbox_sweep(
        journal_reader=adapters.journal_reader,
        store=store,
        now=time.time(),
        schedule=lambda made: _schedule(made, queue=queue),
    )
    return len(ids)


def _schedule(ids: list[int], *, queue: str) -> None:
    for delivery_id in ids:
        webhook_deliver.apply_async(args=[delivery_id], queue=queue)
    # A long queue holds the heartbeat behind it: the events say the worker is here meanwhile
    # (a locked database costs this reading, never the deliveries above).
    with contextlib.suppress(DatabaseError):
        webhook_liveness.worker_seen(queue=queue, now=timezone.now(), throttle=True)


@shared_task(name="worker.webhook_sweep")
def webhook_sweep() -> int:
    """Schedule again the deliveries no task is keeping (``webhook_delivery.stranded``)."""
    queue = container.current().config.webhooks.queue
    ids = webhook_delivery.stranded(now=timezone.now())
    for delivery_id in ids:
        webhook_deliver.apply_async(args=[delivery_id], queue=queue)
    return len(ids)


@shared_task(name="worker.webhook_deliver")
def webhook_deliver(delivery_id: int, force: bool = False) -> str:
    """One attempt; the next one (back-off, or a cap's short wait) is scheduled by countdown."""
    adapters = container.current()
    outcome = webhook_delivery.delivery_attempt(
        delivery_id, adapters=adapters, now=timezone.now(), force=force
    )
    if outcome.retry_in is not None and not outcome.early:
        queue = adapters.config.webhooks.queue
        webhook_deliver.apply_async(args=[delivery_id], countdown=outcome.retry_in, queue=queue)
    return outcome.state


@shared_task(name="worker.webhook_heartbeat")
def webhook_heartbeat() -> None:
    """Beat sends it to the webhook queue: running it proves a worker reads that queue."""
    webhook_liveness.worker_seen(
        queue=container.current().config.webhooks.queue, now=timezone.now()
    )


@worker_ready.connect
def _webhook_worker_ready(sender, **kwargs) -> None:
    """A worker that starts on the webhook queue is seen at once (beat's heartbeat comes a
    minute later), and says so when the outbox is off (nothing will reach it)."""
    config = container.current().config
    if config.webhooks.queue not in sender.app.amqp.queues.consume_from:
        return
    report_off(config, WEBHOOKS, process="webhook_worker")
    webhook_liveness.worker_seen(queue=config.webhooks.queue, now=timezone.now())
