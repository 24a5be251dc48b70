"""Fan-out (one delivery per matching endpoint, its body built once from the journal row) and
one delivery attempt: caps, the destination check, signing, the post, the log, the next retry,
410, and the endpoint's health (failing after WEBHOOK_FAILING_AFTER, one alert).

Both are idempotent: a fan-out delivered twice finds its deliveries (one per endpoint and event
id); an attempt on a delivery that is done does nothing. The Celery tasks (worker/tasks.py)
enqueue what these return; tests call them directly with a clock."""

from __future__ import annotations

import logging
import random as random_module
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import F
from django.utils import timezone

from emailops.alerts import post_alert
from emailops.core.contract import organization_id_of
from emailops.core.events import EventLog
from emailops.core.webhook_delivery import (
    RETRY_WINDOW_SECONDS,
    WebhookRefused,
    body_of,
    retry_delay,
    retryable,
    sign,
)
from emailops.core.webhook_payload import payload
from emailops.core.webhooks import WebhookEvent
from webhooks import sender
from webhooks.destination import destination_check
from webhooks.endpoints import endpoint_filter, signing_secrets
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webhooks.secrets import SecretUnreadable

if TYPE_CHECKING:
    from emailops.config import Config
    from emailops.container import Container
    from emailops.core.ports import JournalReader

__all__ = ["AttemptOutcome", "db_retrying", "delivery_attempt", "fan_out"]

logger = logging.getLogger("webhooks")
Delivery = WebhookDelivery.State
# A capped delivery looks again this soon (not an attempt: it never left).
CAPPED_RETRY_SECONDS = 5
# A locked SQLite (several worker processes writing) or a dropped connection: tries, and the first
# back-off (doubling, at most 2 s): about 15 s in all, beyond SQLite's own busy wait.
DB_ATTEMPTS = 8
DB_RETRY_BASE_SECONDS = 0.1
T = TypeVar("T")
# A delivery made this long ago and never scheduled lost its task (see _created).
ORPHAN_SECONDS = 30


def db_retrying(what: str, call: Callable[[], T], *, sleep: Callable[[float], None]) -> T:
    """``call()``, again after an OperationalError ("database is locked" on SQLite, a dropped
    connection) up to ``DB_ATTEMPTS`` times, backing off; the last one is raised."""
    for attempt in range(1, DB_ATTEMPTS + 1):
        try:
            return call()
        except OperationalError as exc:
            if attempt == DB_ATTEMPTS:
                raise
            EventLog(logger).warning(
                "webhook.db_retry", what=what, attempt=attempt, error=f"{exc}"[:200]
            )
            if not connection.in_atomic_block:
                connection.close()  # a dropped connection is made again on the next query
            sleep(min(DB_RETRY_BASE_SECONDS * 2 ** (attempt - 1), 2.0))
    raise AssertionError("unreachable")


def fan_out(
    event_data: Mapping[str, Any],
    *,
    journal_reader: JournalReader,
    sleep: Callable[[float], None] = time.sleep,
) -> list[int]:
    """The deliveries (ids) to attempt for one emitted event: one per enabled endpoint whose
    filters match the row. Already fanned out (a redelivered task, the outbox's sweep): not
    again. A locked or dropped database is retried (``db_retrying``), never the event lost."""
    event = WebhookEvent.from_dict(event_data)
    row = journal_reader.read(event.journal_key)
    organization = organization_id_of(dict(row.context)) if row else None
    ids = []
    endpoints = db_retrying(
        "read endpoints",
        lambda: list(WebhookEndpoint.objects.filter(enabled=True)),
        sleep=sleep,
    )
    for endpoint in endpoints:
        if not endpoint_filter(endpoint).matches(event.type, row, organization):
            continue
        body = body_of(
            payload(
                event,
                row,
                organization=organization,
                context_keys=endpoint.include_context_keys,
            )
        )
        fields = {
            "endpoint": endpoint,
            "event_id": event.id,
            "event_type": event.type,
            "journal_key": event.journal_key,
            "event": event.to_dict(),
            "body": body,
        }
        created = db_retrying("create delivery", lambda f=fields: _created(f), sleep=sleep)
        if created is not None:
            ids.append(created)
    return ids


def _created(fields: dict[str, Any]) -> int | None:
    """The new delivery's id; None when it was fanned out before and its own task carries it.
    One never scheduled ``ORPHAN_SECONDS`` after it was made (the task that made it died before
    scheduling it, and the outbox's sweep fans its event out again) is scheduled now."""
    try:
        with transaction.atomic():
            return WebhookDelivery.objects.create(**fields).pk
    except IntegrityError:
        pass
    never = WebhookDelivery.objects.filter(
        endpoint=fields["endpoint"],
        event_id=fields["event_id"],
        state=Delivery.PENDING,
        attempts=0,
        next_attempt_at__isnull=True,
        created_at__lt=timezone.now() - timedelta(seconds=ORPHAN_SECONDS),
    )
    return never.values_list("pk", flat=True).first()


@dataclass(frozen=True)
class AttemptOutcome:
    state: str  # the delivery's state after this attempt
    retry_in: float | None = None  # seconds until the next attempt (None: none)
    status: int | None = None
    # Asked before its time (a broker handed a scheduled task out twice): the task that keeps
    # the schedule exists already, so this one schedules nothing (else tasks would pile up).
    early: bool = False


# A minute past its time: a live worker's countdown task runs well within it, and a second one is
# harmless (the reservation refuses an attempt in flight; a delivered one does nothing).
STRANDED_GRACE_SECONDS = 60.0


def delivery_attempt(
    delivery_id: int,
    *,
    adapters: Container,
    now: datetime,
    random: Callable[[], float] = random_module.random,
    force: bool = False,
) -> AttemptOutcome:
    """One attempt. ``force`` (a replay): attempt a delivered or failed one again, same id."""
    config = adapters.config
    settings = config.webhooks
    reserved = db_retrying(
        "reserve delivery",
        lambda: _reserve(delivery_id, now=now, force=force, settings=settings),
        sleep=time.sleep,
    )
    if isinstance(reserved, AttemptOutcome):
        return reserved
    delivery, endpoint = reserved
    log = EventLog(
        logger, key=delivery.journal_key, eventId=delivery.event_id, endpoint=endpoint.pk
    )
    try:
        addresses = destination_check(endpoint.url, allow_loopback=settings.allow_loopback)
        secrets = signing_secrets(endpoint, now, keys=settings.secret_keys)
    except (WebhookRefused, SecretUnreadable) as exc:
        # Never posted: retried as a failure (the DNS, or the keys, may be put right meanwhile).
        result = sender.PostResult(None, 0, exc.describe())
        return _settle(
            delivery, endpoint, result, now=now, random=random, refused=True, log=log, config=config
        )
    headers = sign(delivery.event_id, now, delivery.body, secrets)
    result = sender.post(
        endpoint.url,
        addresses[0],
        headers=headers,
        body=delivery.body,
        timeout=settings.timeout_seconds,
    )
    return _settle(
        delivery, endpoint, result, now=now, random=random, refused=False, log=log, config=config
    )


def stranded(*, now: datetime, grace_seconds: float = STRANDED_GRACE_SECONDS) -> list[int]:
    """Deliveries no task is keeping: still to attempt, or an attempt whose worker died, more
    than ``grace_seconds`` past their time (a lost countdown task, a crash between fan-out and
    scheduling). The sweep schedules them again; an attempt's reservation keeps them single."""
    late = now - timedelta(seconds=grace_seconds)
    open_states = (Delivery.PENDING, Delivery.SENDING)
    overdue = WebhookDelivery.objects.filter(state__in=open_states, next_attempt_at__lt=late)
    never = WebhookDelivery.objects.filter(
        state=Delivery.PENDING, next_attempt_at__isnull=True, created_at__lt=late
    )
    return sorted(
        set(overdue.values_list("pk", flat=True)) | set(never.values_list("pk", flat=True))
    )


def _reserve(delivery_id: int, *, now: datetime, force: bool, settings) -> Any:
    """Mark the delivery SENDING, within its endpoint's caps: (delivery, endpoint), or the
    outcome that says why not now."""
    with transaction.atomic():
        delivery = WebhookDelivery.objects.select_for_update().get(pk=delivery_id)
        endpoint = WebhookEndpoint.objects.select_for_update().get(pk=delivery.endpoint_id)
        done = delivery.state in (Delivery.DELIVERED, Delivery.FAILED)
        if done and not force:
            return AttemptOutcome(delivery.state)
        held = delivery.state == Delivery.SENDING and delivery.next_attempt_at
        if held and delivery.next_attempt_at > now and not force:
            return AttemptOutcome(delivery.state)  # an attempt in flight: one task too many
        waiting = delivery.state == Delivery.PENDING and delivery.next_attempt_at
        if waiting and delivery.next_attempt_at > now and not force:
            # Early (a broker redelivered the scheduled task): keep to the schedule.
            return AttemptOutcome(
                delivery.state,
                retry_in=(delivery.next_attempt_at - now).total_seconds(),
                early=True,
            )
        if not endpoint.enabled:
            delivery.state = Delivery.FAILED
            delivery.save(update_fields=["state"])
            return AttemptOutcome(delivery.state)
        in_flight = (
            WebhookDelivery.objects.filter(
                endpoint=endpoint, state=Delivery.SENDING, next_attempt_at__gt=now
            )
            .exclude(pk=delivery.pk)
            .count()
        )
        recent = WebhookAttempt.objects.filter(
            delivery__endpoint=endpoint, at__gt=now - timedelta(minutes=1)
        ).count()
        if in_flight >= settings.max_in_flight or recent >= settings.max_per_minute:
            return AttemptOutcome(delivery.state, retry_in=CAPPED_RETRY_SECONDS)
        delivery.state = Delivery.SENDING
        # A worker that dies mid-attempt frees its slot when this passes.
        delivery.next_attempt_at = now + timedelta(seconds=2 * settings.timeout_seconds + 5)
        delivery.save(update_fields=["state", "next_attempt_at"])
    return delivery, endpoint


def _settle(
    delivery: WebhookDelivery,
    endpoint: WebhookEndpoint,
    result: sender.PostResult,
    *,
    now: datetime,
    random: Callable[[], float],
    refused: bool,
    log: EventLog,
    config: Config,
) -> AttemptOutcome:
    WebhookAttempt.objects.create(
        delivery=delivery,
        at=now,
        status_code=result.status,
        latency_ms=result.latency_ms,
        error=result.error,
    )
    attempts = delivery.attempts + 1
    ok = result.status is not None and 200 <= result.status < 300
    fields = {"attempts": attempts, "last_status": result.status}
    retry_in = None
    if ok:
        fields |= {"state": Delivery.DELIVERED, "delivered_at": now, "next_attempt_at": None}
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(consecutive_failures=0, failing=False)
    else:
        if result.status == 410:
            WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
                enabled=False, disabled_reason="the receiver answered 410 Gone"
            )
            log.warning("webhook.endpoint_gone", url=endpoint.url)
        window_ends = delivery.created_at + timedelta(seconds=RETRY_WINDOW_SECONDS)
        if (refused or retryable(result.status)) and result.status != 410:
            retry_in = retry_delay(attempts, random=random, base=config.webhooks.retry_base_seconds)
            if now + timedelta(seconds=retry_in) > window_ends:
                retry_in = None
        if retry_in is None:
            fields |= {"state": Delivery.FAILED, "next_attempt_at": None}
        else:
            next_at = now + timedelta(seconds=retry_in)
            fields |= {"state": Delivery.PENDING, "next_attempt_at": next_at}
        _count_failure(endpoint, log, config)
        log.warning(
            "webhook.attempt_failed",
            status=result.status,
            error=result.error or None,
            attempt=attempts,
            retryIn=retry_in,
        )
    WebhookDelivery.objects.filter(pk=delivery.pk).update(**fields)
    return AttemptOutcome(fields["state"], retry_in=retry_in, status=result.status)


def _count_failure(endpoint: WebhookEndpoint, log: EventLog, config: Config) -> None:
    """One more consecutive failure; the one that reaches the limit marks the endpoint failing
    and sends the one alert (the conditional update picks exactly one attempt)."""
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        consecutive_failures=F("consecutive_failures") + 1
    )
    marked = WebhookEndpoint.objects.filter(
        pk=endpoint.pk,
        failing=False,
        consecutive_failures__gte=config.webhooks.failing_after,
    ).update(failing=True)
    if not marked:
        return
    log.error("webhook.endpoint_failing", url=endpoint.url)
    url = config.reputation.alert_webhook_url
    if url:
        text = (
            f"emailops webhook endpoint {endpoint.pk} ({endpoint.url}) is failing: "
            f"{config.webhooks.failing_after} attempts in a row failed; retries go on."
        )
        try:
            post_alert(url, text)
        except OSError as exc:
            log.error("webhook.alert_failed", error=f"{type(exc).__name__}: {exc}")
