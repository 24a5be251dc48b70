"""Webhooks end to end on in-process moto with a local receiver: a send, its delivery and its
bounce arrive as three signed events; retries keep the event id and leave a log; filters, SSRF,
410, the failing mark's one alert, rotation and duplicate SES events."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from emailops import container
from emailops.core.contract import parse_request
from emailops.core.dedupe import dedupe_key
from emailops.core.delivery_events import encode_journal_key
from emailops.core.ports import TemplateMapping
from emailops.core.webhook_delivery import WebhookRefused
from emailops.core.webhooks import sent_event
from tests.core.test_delivery_events import envelope, ses_event
from tests.fakes import RecordingOutbox
from webhooks import delivery, destination, endpoints
from webhooks.models import WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.django_db

# Signed times are the test's own "now", never the module's import time: standardwebhooks checks
# the signed timestamp against the clock (5 minutes), and under xdist a module imported at
# collection may run its tests many minutes later.
BODY = json.dumps(
    {
        "messageId": "added-to-team",
        "recipients": [{"email": "erin@example.com"}],
        "context": {"teamName": "Team", "administrator": "Ada", "apiToken": "s3cret"},
    }
)


@pytest.fixture
def stack(aws_events, loopback_webhooks):
    adapters = container.current()
    adapters.mapping_store.save_mapping(
        TemplateMapping("added-to-team", "added-to-team.html", "Welcome to {{.teamName}}"),
        expected_version=None,
    )
    adapters.template_store.write_template("default/added-to-team.html", "<p>{{.teamName}}</p>")
    outbox = RecordingOutbox()
    adapters.__dict__["webhook_outbox"] = outbox  # before the pipeline and handler are built
    return adapters, outbox


def send(adapters, body: str = BODY, namespace: str = "") -> str:
    pipeline = adapters.build_pipeline(lease_seconds=30)
    pipeline.process(body, record_id="sqs-1", namespace=namespace)
    return dedupe_key(replace(parse_request(body), namespace=namespace), "erin@example.com")


def ses_event_for(adapters, key: str, name: str) -> str:
    row = adapters.journal_reader.read(key)
    event = copy.deepcopy(ses_event(name))
    event["mail"]["messageId"] = row.ses_message_id
    event["mail"]["tags"]["emailops-journal-key"] = [encode_journal_key(key)]
    return envelope(event, message_id=f"sns-{name}")


def deliver_all(outbox, *, now: datetime | None = None) -> list:
    now = now or datetime.now(UTC)
    outcomes = []
    for event in outbox.events:
        for delivery_id in delivery.fan_out(
            event.to_dict(), journal_reader=container.current().journal_reader
        ):
            outcomes.append(
                delivery.delivery_attempt(delivery_id, adapters=container.current(), now=now)
            )
    outbox.events.clear()
    return outcomes


def verified(receiver, secret: str) -> list[dict]:
    return [Webhook(secret).verify(body, headers) for headers, body in receiver.received]


def test_a_send_its_delivery_and_a_bounce_arrive_as_three_signed_events(stack, receiver):
    adapters, outbox = stack
    _, secret = endpoints.endpoint_add(
        adapters=container.current(), url=receiver.url, include_context_keys=True
    )
    key = send(adapters)
    handler = adapters.delivery_event_handler
    assert handler.handle(ses_event_for(adapters, key, "delivery.json")).result == "applied"
    assert handler.handle(ses_event_for(adapters, key, "bounce.json")).result == "applied"
    outcomes = deliver_all(outbox)
    assert [o.state for o in outcomes] == ["delivered"] * 3
    events = verified(receiver, secret)
    assert [e["type"] for e in events] == ["email.sent", "email.delivered", "email.bounced"]
    data = events[2]["data"]
    assert data["journalKey"] == key and data["messageId"] == "added-to-team"
    assert data["recipient"] == "erin@example.com" and data["hard"] is True
    assert data["bounceType"] == "Permanent"
    assert "apiToken" in data["contextKeys"]
    assert "s3cret" not in "".join(body for _, body in receiver.received)
    ids = [headers["webhook-id"] for headers, _ in receiver.received]
    assert len(set(ids)) == 3


def test_duplicate_ses_events_emit_one_webhook(stack, receiver):
    adapters, outbox = stack
    endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    key = send(adapters)
    outbox.events.clear()
    handler = adapters.delivery_event_handler
    bounce = ses_event_for(adapters, key, "bounce.json")
    assert handler.handle(bounce).result == "applied"
    assert handler.handle(bounce).result == "duplicate"
    deliver_all(outbox)
    assert len(receiver.received) == 1
    # The same event fanned out again (a redelivered task) is not delivered twice either.
    event = sent_event(key, ses_message_id="x", sent_at=0)
    assert (
        len(delivery.fan_out(event.to_dict(), journal_reader=container.current().journal_reader))
        == 1
    )
    assert (
        delivery.fan_out(event.to_dict(), journal_reader=container.current().journal_reader) == []
    )


def test_fails_five_times_then_succeeds_with_the_same_event_id_and_a_log(stack, receiver):
    adapters, outbox = stack
    endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    send(adapters)
    receiver.answers = [500, 503, 429, 502, 500]
    (event,) = outbox.events
    (delivery_id,) = delivery.fan_out(
        event.to_dict(), journal_reader=container.current().journal_reader
    )
    now, waits = datetime.now(UTC), []
    for _ in range(6):
        outcome = delivery.delivery_attempt(
            delivery_id, adapters=container.current(), now=now, random=lambda: 0.5
        )
        if outcome.retry_in is None:
            break
        waits.append(outcome.retry_in)
        early = delivery.delivery_attempt(
            delivery_id, adapters=container.current(), now=now + timedelta(seconds=1)
        )
        assert early.retry_in is not None and len(receiver.received) == len(waits)  # not yet
        now += timedelta(seconds=outcome.retry_in)
    assert outcome.state == "delivered"
    assert waits == sorted(waits) and len(waits) == 5
    assert {headers["webhook-id"] for headers, _ in receiver.received} == {event.id}
    record = WebhookDelivery.objects.get(pk=delivery_id)
    assert record.attempts == 6
    assert [a.status_code for a in record.log.all()] == [500, 503, 429, 502, 500, 200]


def test_a_token_endpoint_never_sees_another_producers_rows(stack, receiver):
    adapters, outbox = stack
    endpoints.endpoint_add(adapters=container.current(), url=receiver.url, producer="tok_a")
    send(adapters, namespace="tok_b")
    send(adapters)  # the queue's
    deliver_all(outbox)
    assert receiver.received == []
    send(adapters, namespace="tok_a")
    deliver_all(outbox)
    assert [json.loads(b)["data"]["producer"] for _, b in receiver.received] == ["tok_a"]


def test_event_type_and_message_id_filters(stack, receiver):
    adapters, outbox = stack
    endpoints.endpoint_add(
        adapters=container.current(), url=receiver.url, event_types=["email.bounced"]
    )
    endpoints.endpoint_add(
        adapters=container.current(), url=receiver.url, message_ids=["another-message"]
    )
    send(adapters)
    deliver_all(outbox)
    assert receiver.received == []


def test_ssrf_refused_at_creation_and_at_delivery_when_dns_changed(stack, receiver, monkeypatch):
    adapters, outbox = stack
    monkeypatch.setattr(destination, "resolve", lambda host, port: ["10.1.2.3"])
    with pytest.raises(WebhookRefused, match="private"):
        endpoints.endpoint_add(adapters=container.current(), url="http://hooks.internal.test/x")
    monkeypatch.setattr(destination, "resolve", lambda host, port: ["127.0.0.1"])
    endpoints.endpoint_add(
        adapters=container.current(), url=receiver.url.replace("127.0.0.1", "hooks.test")
    )
    send(adapters)
    monkeypatch.setattr(destination, "resolve", lambda host, port: ["169.254.169.254"])
    (outcome,) = deliver_all(outbox)
    assert outcome.state == "pending" and outcome.retry_in  # refused, not posted
    assert receiver.received == []
    assert "private" in WebhookDelivery.objects.get().log.get().error


def test_loopback_is_refused_outside_debug(settings, db):
    settings.WEBHOOK_ALLOW_LOOPBACK = False
    container.reset()
    with pytest.raises(WebhookRefused):
        endpoints.endpoint_add(adapters=container.current(), url="http://127.0.0.1:9/hooks")
    with pytest.raises(WebhookRefused):
        endpoints.endpoint_add(adapters=container.current(), url="https://127.0.0.1:9/hooks")
    container.reset()


def test_410_disables_the_endpoint(stack, receiver):
    adapters, outbox = stack
    endpoint, _ = endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    receiver.answers = [410]
    send(adapters)
    (outcome,) = deliver_all(outbox)
    assert outcome.state == "failed"
    endpoint.refresh_from_db()
    assert not endpoint.enabled and "410" in endpoint.disabled_reason


def test_consecutive_failures_mark_the_endpoint_failing_with_one_alert(
    stack, receiver, settings, monkeypatch
):
    _, outbox = stack
    settings.WEBHOOK_FAILING_AFTER = 3
    settings.ALERT_WEBHOOK_URL = "https://alerts.example/hook"
    container.reset()
    container.current().__dict__["webhook_outbox"] = outbox
    alerts = []
    monkeypatch.setattr(delivery, "post_alert", lambda url, text: alerts.append(text))
    endpoint, _ = endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    receiver.answers = [500] * 10
    for _ in range(5):
        send(container.current(), BODY.replace("Team", f"Team{_}"))
    deliver_all(outbox)
    endpoint.refresh_from_db()
    assert endpoint.failing and endpoint.consecutive_failures == 5
    assert len(alerts) == 1 and str(endpoint.pk) in alerts[0]


def test_rotation_both_secrets_sign_during_the_overlap_then_only_the_new(stack, receiver):
    adapters, outbox = stack
    endpoint, old = endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    start = datetime.now(UTC)
    new = endpoints.endpoint_rotate(
        adapters=container.current(), endpoint_id=endpoint.pk, now=start
    )
    send(adapters)
    deliver_all(outbox)
    assert verified(receiver, old) and verified(receiver, new)
    receiver.received.clear()
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        previous_secret_until=start - timedelta(seconds=1)  # the overlap has ended
    )
    send(adapters, BODY.replace("Team", "Later"))
    deliver_all(outbox)
    assert verified(receiver, new)
    with pytest.raises(WebhookVerificationError):
        verified(receiver, old)


def test_a_disabled_endpoint_gets_nothing(stack, receiver):
    adapters, outbox = stack
    endpoint, _ = endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    endpoints.endpoint_set_enabled(endpoint_id=endpoint.pk, enabled=False)
    send(adapters)
    assert deliver_all(outbox) == []
    assert WebhookEndpoint.objects.get().enabled is False


def test_a_log_only_and_a_suppressed_row_each_emit_one_not_delivered_event(
    stack, receiver, settings
):
    adapters, outbox = stack
    _endpoint, secret = endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    adapters.suppression_list.add(
        "erin@example.com", reason="bounce", detail="550", source="t", now=1_764_000_000
    )
    key = send(adapters)
    send(adapters)  # the same request again: the row is written, nothing new is emitted
    settings.SEND_ENABLED = False
    container.reset()
    adapters = container.current()
    adapters.__dict__["webhook_outbox"] = outbox
    other = BODY.replace("Team", "Other")
    logged = send(adapters, other)
    assert [(e.type, e.journal_key, e.facts["reason"]) for e in outbox.events] == [
        ("email.not_delivered", key, "suppressed"),
        ("email.not_delivered", logged, "service-stop"),
    ]
    deliver_all(outbox)
    payloads = verified(receiver, secret)
    assert [p["type"] for p in payloads] == ["email.not_delivered"] * 2


def test_the_payload_carries_the_requests_dedupe_id(stack, receiver):
    adapters, outbox = stack
    _endpoint, secret = endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    body = json.loads(BODY) | {"dedupeId": "invite-42"}
    send(adapters, json.dumps(body))
    deliver_all(outbox)
    [sent] = verified(receiver, secret)
    assert sent["data"]["dedupeId"] == "invite-42"


def test_a_delivery_no_task_keeps_is_swept_and_an_early_one_schedules_nothing(stack, receiver):
    """A crash between fan-out and scheduling, or a lost countdown task, left deliveries that no
    task would ever attempt; and every early redelivery scheduled one more task."""
    adapters, outbox = stack
    endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    send(adapters)
    (event,) = outbox.events
    (lost,) = delivery.fan_out(event.to_dict(), journal_reader=container.current().journal_reader)
    now = datetime.now(UTC)
    assert delivery.stranded(now=now) == []  # just made: its task may be on its way
    later = now + timedelta(minutes=11)
    assert delivery.stranded(now=later) == [lost]

    receiver.answers = [503]
    first = delivery.delivery_attempt(
        lost, adapters=container.current(), now=later, random=lambda: 0.5
    )
    assert first.retry_in is not None and not first.early
    early = delivery.delivery_attempt(
        lost, adapters=container.current(), now=later + timedelta(seconds=1)
    )
    assert early.early and early.retry_in is not None  # webhook_deliver schedules nothing
    assert delivery.stranded(now=later) == []  # its retry is scheduled and not yet due
    overdue = later + timedelta(seconds=first.retry_in + 601)
    assert delivery.stranded(now=overdue) == [lost]
    assert (
        delivery.delivery_attempt(lost, adapters=container.current(), now=overdue).state
        == "delivered"
    )
    assert delivery.stranded(now=overdue) == []


def test_the_sweep_is_on_the_beat_schedule():
    from celery import Celery

    from emailops.celery import _beat_schedule

    app = Celery("sweep-test")
    _beat_schedule(app)
    assert app.conf.beat_schedule["webhook-sweep"]["task"] == "worker.webhook_sweep"


def test_the_sweep_task_schedules_the_stranded_and_an_early_task_schedules_nothing(
    stack, receiver, monkeypatch
):
    from worker import tasks

    adapters, outbox = stack
    endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    send(adapters)
    (event,) = outbox.events
    (lost,) = delivery.fan_out(event.to_dict(), journal_reader=container.current().journal_reader)
    scheduled: list = []
    monkeypatch.setattr(
        tasks.webhook_deliver, "apply_async", lambda **kw: scheduled.append(kw["args"])
    )
    WebhookDelivery.objects.filter(pk=lost).update(
        created_at=datetime.now(UTC) - timedelta(minutes=11)
    )
    assert tasks.webhook_sweep() == 1 and scheduled == [[lost]]

    receiver.answers = [503]
    scheduled.clear()
    tasks.webhook_deliver(lost)  # fails: its retry is scheduled once
    assert scheduled == [[lost]]
    tasks.webhook_deliver(lost)  # the broker hands a task out early: nothing more scheduled
    assert scheduled == [[lost]]
