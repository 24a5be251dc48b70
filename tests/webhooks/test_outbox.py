"""The durable outbox end to end in-process (moto, the console's database, a local receiver):
with the broker down every wake-up is lost and the sweep still delivers each event once; a
wake-up deletes its item; a locked database is retried, never the event lost; a delivery whose
task died before scheduling it is scheduled by the event's next fan-out."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.db import OperationalError

from emailops import container
from emailops.core.ports import TemplateMapping
from tests.fakes import RecordingOutbox
from tests.webhooks.test_delivery import BODY, send, ses_event_for, verified
from webhooks import delivery, endpoints, outbox
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db


@pytest.fixture
def durable(aws_events, loopback_webhooks, settings):
    """The default outbox (durable) with its wake-up failing: the broker is down."""
    settings.WEBHOOK_OUTBOX = "durable"
    container.reset()
    adapters = container.current()
    adapters.mapping_store.save_mapping(
        TemplateMapping("added-to-team", "added-to-team.html", "Welcome to {{.teamName}}"),
        expected_version=None,
    )
    adapters.template_store.write_template("default/added-to-team.html", "<p>{{.teamName}}</p>")
    adapters.__dict__["webhook_outbox"] = RecordingOutbox(fail=True)
    return adapters


def sweep(adapters, *, at: float) -> list[int]:
    return outbox.outbox_sweep(
        journal_reader=adapters.journal_reader,
        store=adapters.webhook_outbox_store,
        now=at,
        sleep=lambda _: None,
    )


def attempt_all(adapters, ids: list[int]) -> list[str]:
    now = datetime.now(UTC)
    return [delivery.delivery_attempt(i, adapters=adapters, now=now).state for i in ids]


def test_with_every_wake_up_lost_the_sweep_delivers_each_event_once(durable, receiver):
    adapters = durable
    _, secret = endpoints.endpoint_add(adapters=adapters, url=receiver.url)
    key = send(adapters, BODY)
    handler = adapters.delivery_event_handler
    assert handler.handle(ses_event_for(adapters, key, "delivery.json")).result == "applied"
    store = adapters.webhook_outbox_store
    assert len(store.pending(created_before=time.time() + 1, limit=10)) == 2
    assert sweep(adapters, at=time.time()) == []  # younger than the grace: a wake-up may come
    ids = sweep(adapters, at=time.time() + outbox.SWEEP_GRACE_SECONDS + 1)
    assert attempt_all(adapters, ids) == ["delivered", "delivered"]
    events = verified(receiver, secret)
    assert sorted(e["type"] for e in events) == ["email.delivered", "email.sent"]
    assert store.pending(created_before=time.time() + 60, limit=10) == []
    # A second sweep (or a late wake-up of the same event) makes nothing new.
    assert sweep(adapters, at=time.time() + 60) == []
    assert len(receiver.received) == 2


def test_an_event_left_an_hour_is_said_loudly(durable, receiver, caplog):
    adapters = durable
    endpoints.endpoint_add(adapters=adapters, url=receiver.url)
    send(adapters, BODY)
    caplog.set_level(logging.WARNING, logger="webhooks")
    assert len(sweep(adapters, at=time.time() + outbox.STALE_SECONDS + 60)) == 1
    (stale,) = [r for r in caplog.records if "webhook.outbox_stale" in r.getMessage()]
    assert stale.levelno == logging.ERROR and "count=1" in stale.getMessage()


def test_a_wake_up_fans_out_and_deletes_its_item(durable, receiver):
    adapters = durable
    adapters.__dict__["webhook_outbox"] = wake = RecordingOutbox()
    endpoints.endpoint_add(adapters=adapters, url=receiver.url)
    send(adapters, BODY)
    (event,) = wake.events
    store = adapters.webhook_outbox_store
    ids = outbox.outbox_fan_out(
        event.to_dict(), journal_reader=adapters.journal_reader, store=store
    )
    assert len(ids) == 1
    assert store.pending(created_before=time.time() + 60, limit=10) == []


def test_a_fan_out_that_fails_leaves_the_item_for_the_sweep(durable, receiver, monkeypatch):
    adapters = durable
    adapters.__dict__["webhook_outbox"] = wake = RecordingOutbox()
    endpoints.endpoint_add(adapters=adapters, url=receiver.url)
    send(adapters, BODY)
    (event,) = wake.events
    store = adapters.webhook_outbox_store

    def down(**kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(WebhookDelivery.objects, "create", down)
    with pytest.raises(OperationalError):
        outbox.outbox_fan_out(
            event.to_dict(),
            journal_reader=adapters.journal_reader,
            store=store,
            sleep=lambda _: None,
        )
    monkeypatch.undo()
    assert [p.event for p in store.pending(created_before=time.time() + 60, limit=10)] == [event]
    assert len(sweep(adapters, at=time.time() + 60)) == 1


def test_a_locked_database_is_retried_not_the_event_lost(durable, receiver, monkeypatch):
    adapters = durable
    adapters.__dict__["webhook_outbox"] = wake = RecordingOutbox()
    endpoints.endpoint_add(adapters=adapters, url=receiver.url)
    send(adapters, BODY)
    (event,) = wake.events
    create = WebhookDelivery.objects.create
    locked = [OperationalError("database is locked")] * 3
    slept: list[float] = []

    def flaky(**kwargs):
        if locked:
            raise locked.pop()
        return create(**kwargs)

    monkeypatch.setattr(WebhookDelivery.objects, "create", flaky)
    ids = delivery.fan_out(
        event.to_dict(), journal_reader=adapters.journal_reader, sleep=slept.append
    )
    assert len(ids) == 1 and locked == []
    assert slept == [0.1, 0.2, 0.4]


def test_a_delivery_whose_task_died_before_scheduling_it_is_scheduled_again(durable, receiver):
    adapters = durable
    adapters.__dict__["webhook_outbox"] = wake = RecordingOutbox()
    endpoints.endpoint_add(adapters=adapters, url=receiver.url)
    send(adapters, BODY)
    (event,) = wake.events
    reader = adapters.journal_reader
    (made,) = delivery.fan_out(event.to_dict(), journal_reader=reader)  # then the worker dies
    assert delivery.fan_out(event.to_dict(), journal_reader=reader) == []  # its task may run
    WebhookDelivery.objects.filter(pk=made).update(
        created_at=datetime.now(UTC) - timedelta(seconds=delivery.ORPHAN_SECONDS + 1)
    )
    assert delivery.fan_out(event.to_dict(), journal_reader=reader) == [made]


def test_an_attempt_in_flight_is_not_attempted_again_by_a_second_task(durable, receiver):
    adapters = durable
    adapters.__dict__["webhook_outbox"] = wake = RecordingOutbox()
    endpoints.endpoint_add(adapters=adapters, url=receiver.url)
    send(adapters, BODY)
    (event,) = wake.events
    (made,) = delivery.fan_out(event.to_dict(), journal_reader=adapters.journal_reader)
    now = datetime.now(UTC)
    WebhookDelivery.objects.filter(pk=made).update(
        state=WebhookDelivery.State.SENDING, next_attempt_at=now + timedelta(seconds=15)
    )
    assert delivery.delivery_attempt(made, adapters=adapters, now=now).state == "sending"
    assert receiver.received == []


def test_the_outbox_sweep_is_on_the_beat_schedule_on_the_webhook_queue(settings):
    from celery import Celery

    from emailops.celery import _beat_schedule

    settings.WEBHOOK_OUTBOX = "durable"
    app = Celery("outbox-sweep-test")
    _beat_schedule(app)
    entry = app.conf.beat_schedule["webhook-outbox-sweep"]
    assert entry["task"] == "worker.webhook_outbox_sweep"
    assert entry["schedule"] <= 10 and entry["options"]["queue"] == settings.WEBHOOK_QUEUE
    settings.WEBHOOK_OUTBOX = "off"
    _beat_schedule(app)
    assert "webhook-outbox-sweep" not in app.conf.beat_schedule


def test_a_scheduling_that_fails_leaves_the_item_for_the_sweep(durable, receiver):
    """Redis went down between the fan-out and the attempts' tasks: the item stays, so the
    sweep fans the event out again and (once ORPHAN_SECONDS pass) schedules the delivery."""
    adapters = durable
    adapters.__dict__["webhook_outbox"] = wake = RecordingOutbox()
    endpoints.endpoint_add(adapters=adapters, url=receiver.url)
    send(adapters, BODY)
    (event,) = wake.events
    store = adapters.webhook_outbox_store

    def broker_down(ids):
        raise ConnectionError("broker unreachable")

    with pytest.raises(ConnectionError):
        outbox.outbox_fan_out(
            event.to_dict(),
            journal_reader=adapters.journal_reader,
            store=store,
            schedule=broker_down,
        )
    assert [p.event for p in store.pending(created_before=time.time() + 60, limit=10)] == [event]
