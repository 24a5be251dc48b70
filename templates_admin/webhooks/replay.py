"""What the console does to deliveries: replay one now (``force``: a delivered or failed one is
attempted again, with the same event id, so a receiver that has it dedupes), replay every failed
delivery of an endpoint in a time range (a job: ``webhook_replay_run``, registered by the jobs
area), and send a test event to one endpoint.

A replay that fails and is worth retrying is handed to the webhook workers by task name (the
console does not import the worker), as their own attempts are."""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.utils import timezone

from emailops.core.events import EventLog
from emailops.core.journal_row import JournalRow
from emailops.core.webhook_delivery import WebhookRefused, body_of, sign
from emailops.core.webhook_payload import payload
from emailops.core.webhooks import WebhookEvent
from jobs.models import Job, JobStep
from templates_admin.webhooks.selectors import failed_in_range
from webhooks import sender
from webhooks.delivery import AttemptOutcome, delivery_attempt
from webhooks.destination import destination_check
from webhooks.endpoints import signing_secrets
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.secrets import SecretUnreadable

if TYPE_CHECKING:
    from emailops.config import WebhooksConfig
    from emailops.container import Container

__all__ = [
    "TEST_EVENT_TYPE",
    "SentTestEvent",
    "delivery_replay",
    "send_test_event",
    "webhook_replay_inputs",
    "webhook_replay_run",
]

logger = logging.getLogger("templates_admin.webhooks")
log = EventLog(logger)
DELIVER_TASK = "worker.webhook_deliver"  # worker.tasks.webhook_deliver
# Not one of the events a row makes (EVENT_TYPES): a receiver can tell it apart and drop it.
TEST_EVENT_TYPE = "email.test"
MAX_REPLAYS = 5000  # one job; more means the range is wrong
# An endpoint at its in-flight or per-minute cap: the job waits this often before giving up.
_CAPPED_WAITS = 6


def _actor(user: AbstractBaseUser | None) -> str:
    return user.get_username() if user is not None else ""


def _retry_later(delivery_id: int, retry_in: float, settings: WebhooksConfig) -> bool:
    """Hand a replay's next attempt to the webhook workers. Only where webhook events go to
    Celery (any WEBHOOK_OUTBOX but off): elsewhere no webhook worker runs."""
    if not settings.emitted:
        return False
    from emailops.celery import app

    try:
        app.send_task(
            DELIVER_TASK,
            args=[delivery_id],
            countdown=retry_in,
            queue=settings.queue,
            retry=False,
        )
    except Exception as exc:  # kombu raises its own and socket errors alike
        log.error("webhook.retry_not_scheduled", delivery=delivery_id, error=repr(exc))
        return False
    return True


def _replay(delivery: WebhookDelivery, *, now: datetime, adapters: Container) -> AttemptOutcome:
    outcome = delivery_attempt(delivery.pk, adapters=adapters, now=now, force=True)
    if outcome.retry_in is not None and outcome.state == WebhookDelivery.State.PENDING:
        _retry_later(delivery.pk, outcome.retry_in, adapters.config.webhooks)
    return outcome


def delivery_replay(
    *,
    adapters: Container,
    delivery_id: int,
    user: AbstractBaseUser | None,
    now: datetime | None = None,
) -> AttemptOutcome:
    """Attempt the delivery again now, whatever its state. ValidationError when its endpoint is
    disabled (enable it first: a disabled endpoint gets nothing)."""
    delivery = WebhookDelivery.objects.select_related("endpoint").get(pk=delivery_id)
    if not delivery.endpoint.enabled:
        raise ValidationError("The endpoint is disabled: enable it before replaying to it.")
    outcome = _replay(delivery, now=now or timezone.now(), adapters=adapters)
    log.info(
        "webhook.replayed",
        user=_actor(user),
        delivery=delivery.pk,
        endpoint=delivery.endpoint_id,
        eventId=delivery.event_id,
        state=outcome.state,
        status=outcome.status,
    )
    return outcome


# --- Replay the failed deliveries of a range: a job --------------------------------------------


def webhook_replay_inputs(*, endpoint_id: int, since: datetime, until: datetime) -> dict[str, Any]:
    endpoint = WebhookEndpoint.objects.filter(pk=endpoint_id).first()
    if endpoint is None:
        raise ValueError(f"no webhook endpoint {endpoint_id}")
    if not endpoint.enabled:
        raise ValueError("the endpoint is disabled: enable it before replaying to it")
    if since > until:
        raise ValueError("the time range ends before it starts")
    return {
        "endpoint": endpoint.pk,
        "url": endpoint.url,
        "since": int(since.timestamp()),
        "until": int(until.timestamp()),
    }


def _select(job: Job, progress) -> dict[str, Any]:
    inputs = job.inputs
    failed = failed_in_range(
        inputs["endpoint"],
        since=datetime.fromtimestamp(inputs["since"], UTC),
        until=datetime.fromtimestamp(inputs["until"], UTC),
    )
    matched = failed.count()
    chosen = list(failed.values("pk", "event_type", "event_id")[:MAX_REPLAYS])
    JobStep.objects.bulk_create(
        [
            JobStep(
                job=job,
                key=str(d["pk"]),
                detail={"event_type": d["event_type"], "event_id": d["event_id"]},
            )
            for d in chosen
        ],
        ignore_conflicts=True,
    )
    selection = {"matched": matched, "capped": matched > MAX_REPLAYS}
    Job.objects.filter(pk=job.pk).update(result={"selection": selection})
    progress.set_total(len(chosen))
    return selection


def _replay_step(delivery: WebhookDelivery, progress, adapters: Container) -> AttemptOutcome | None:
    """One delivery replayed; None when the endpoint's caps kept it from leaving every time."""
    for _ in range(_CAPPED_WAITS):
        before = delivery.attempts
        outcome = _replay(delivery, now=timezone.now(), adapters=adapters)
        delivery.refresh_from_db(fields=["attempts"])
        if delivery.attempts > before or outcome.retry_in is None:
            return outcome
        progress.beat()
        time.sleep(outcome.retry_in)  # capped: it never left; wait for a slot
    return None


def webhook_replay_run(job: Job, progress, *, adapters: Container) -> dict[str, Any]:
    """Replay each chosen delivery once (a step per delivery, so a resumed job skips the ones
    already replayed). The selection is frozen on the first run: a delivery that fails again
    during the job is not picked up twice."""
    selection, pending = progress.resume(_select)
    for step in pending:
        detail = dict(step.detail)
        delivery = (
            WebhookDelivery.objects.select_related("endpoint").filter(pk=int(step.key)).first()
        )
        if delivery is None:
            progress.step(step.key, JobStep.Outcome.SKIPPED, **detail, why="no longer exists")
        elif not delivery.endpoint.enabled:
            progress.step(step.key, JobStep.Outcome.FAILED, **detail, why="endpoint disabled")
        else:
            outcome = _replay_step(delivery, progress, adapters)
            if outcome is None:
                progress.step(
                    step.key, JobStep.Outcome.FAILED, **detail, why="endpoint at its caps"
                )
            else:
                done = outcome.state == WebhookDelivery.State.DELIVERED
                progress.step(
                    step.key,
                    JobStep.Outcome.DONE if done else JobStep.Outcome.FAILED,
                    **detail,
                    state=outcome.state,
                    status=outcome.status,
                )
        progress.advance()
    log.info(
        "webhook.replay_job",
        job=job.pk,
        user=_actor(job.created_by),
        endpoint=job.inputs["endpoint"],
    )
    counts = progress.counts()
    return {"selection": selection, "delivered": counts["done"], **counts}


# --- A test event ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SentTestEvent:
    event_id: str
    status: int | None  # None: refused by the destination check, a timeout or no connection
    latency_ms: int
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def _synthetic_row(endpoint: WebhookEndpoint, key: str, at: datetime) -> JournalRow:
    return JournalRow(
        key=key,
        message_id="emailops-test",
        recipient="test@example.invalid",
        status="SENT",
        message_sent=at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        ses_message_id=key,
        producer=endpoint.producer or "",
        context={"teamName": "Test team"},
    )


def send_test_event(
    *,
    adapters: Container,
    endpoint_id: int,
    user: AbstractBaseUser | None,
    now: datetime | None = None,
) -> SentTestEvent:
    """Post one ``email.test`` event, shaped like an ``email.sent`` of a made-up row, to the
    endpoint now, signed as any delivery is. One attempt, no delivery recorded, no retry, and
    the endpoint's health is left as it is: a test says how the receiver answers, nothing more.
    It goes whatever the endpoint's filters (and even when it is disabled)."""
    now = now or timezone.now()
    endpoint = WebhookEndpoint.objects.get(pk=endpoint_id)
    key = f"test-{uuid.uuid4().hex}"
    row = _synthetic_row(endpoint, key, now)
    event = WebhookEvent(
        id=f"evt_test_{uuid.uuid4().hex}",
        type=TEST_EVENT_TYPE,
        journal_key=key,
        occurred_at=now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        facts={"ses_message_id": row.ses_message_id, "test": True},
    )
    body = body_of(
        payload(
            event,
            row,
            organization=endpoint.organization or None,
            context_keys=endpoint.include_context_keys,
        )
    )
    settings = adapters.config.webhooks
    try:
        addresses = destination_check(endpoint.url, allow_loopback=settings.allow_loopback)
        secrets = signing_secrets(endpoint, now, keys=settings.secret_keys)
    except (WebhookRefused, SecretUnreadable) as exc:
        result = sender.PostResult(None, 0, exc.describe())
    else:
        result = sender.post(
            endpoint.url,
            addresses[0],
            headers=sign(event.id, now, body, secrets),
            body=body,
            timeout=settings.timeout_seconds,
        )
    log.info(
        "webhook.test_sent",
        user=_actor(user),
        endpoint=endpoint.pk,
        eventId=event.id,
        status=result.status,
        error=result.error or None,
    )
    return SentTestEvent(event.id, result.status, result.latency_ms, result.error)
