"""Issue 32, point 6: erasing a recipient covers its webhook deliveries. Their payloads, events,
keys and attempt errors are rewritten with the address's erased name: the delivery page, the
endpoint's log and the log lines show no address, and a replay sends the redacted payload.
Another recipient's deliveries are left as they were."""

from __future__ import annotations

import json
import logging
from html import unescape

import pytest
from django.utils import timezone

from emailops import container
from emailops.core.webhooks import sent_event
from templates_admin.journal.erasure import recipient_erase, recipient_erase_preview
from tests.journal_factory import BASE_TIME, journal_row, put_rows
from tests.webhooks.conftest import Receiver
from webhooks import delivery, endpoints
from webhooks.models import WebhookAttempt, WebhookDelivery

pytestmark = pytest.mark.django_db

DANA, KIM = "dana@example.com", "kim@example.com"
WEBHOOKS = "/admin/templates_admin/webhookspage/"
KEYS = {"dana-keyed": "reset-42:dana@example.com", "kim": "reset-43:kim@example.com"}


@pytest.fixture
def receiver(settings):
    settings.WEBHOOK_ALLOW_LOOPBACK = True
    container.reset()
    running = Receiver()
    yield running
    running.close()
    container.reset()


@pytest.fixture
def delivered(aws, receiver):
    """Dana's two rows (one keyed by a dedupe id, so its key names her) and Kim's, each with an
    email.sent delivered to the receiver; one of Dana's attempts failed first, quoting her."""
    rows = [
        journal_row(DANA, at=BASE_TIME, key=KEYS["dana-keyed"]),
        journal_row('"Dana" <Dana@Example.com>', at=BASE_TIME + 1),
        journal_row(KIM, at=BASE_TIME + 2, key=KEYS["kim"]),
    ]
    put_rows(aws.dynamodb, "email-journal", rows)
    adapters = container.current()
    endpoints.endpoint_add(adapters=adapters, url=receiver.url)
    receiver.answers = [500]
    for n, row in enumerate(rows):
        event = sent_event(row["Id"], ses_message_id=f"ses-{n}", sent_at=BASE_TIME)
        for delivery_id in delivery.fan_out(
            event.to_dict(), journal_reader=adapters.journal_reader
        ):
            delivery.delivery_attempt(delivery_id, adapters=adapters, now=timezone.now())
    WebhookAttempt.objects.filter(status_code=500).update(error=f"receiver: no such user {DANA}")
    assert sum(DANA in body.lower() for _, body in receiver.received) == 2
    return rows


def names_dana(value: str) -> bool:
    return "dana@example.com" in value.lower()


def test_erasure_rewrites_the_deliveries_and_a_replay_sends_the_redacted_payload(
    delivered, receiver, client, make_user, caplog
):
    adapters = container.current()
    assert recipient_erase_preview(adapters=adapters, address=DANA).webhook_deliveries == 2
    caplog.set_level(logging.INFO)  # (botocore's DEBUG lines carry the requests themselves)
    report = recipient_erase(adapters=adapters, address=DANA, actor="t")
    assert report.webhook_deliveries == 2
    assert any("2 webhook delivery(ies)" in line for line in report.lines())

    name = adapters.tombstones.name(DANA)
    dana, kim = [], []
    for found in WebhookDelivery.objects.all():
        (kim if "kim" in found.body else dana).append(found)
    assert len(dana) == 2 and len(kim) == 1
    for found in dana:
        stored = json.dumps([found.body, found.event, found.journal_key])
        stored += json.dumps([a.error for a in found.log.all()])
        assert not names_dana(stored) and "Dana@Example" not in stored
        assert json.loads(found.body)["data"]["recipient"] == name
    keyed = next(d for d in dana if d.journal_key.startswith("reset-42:"))
    assert keyed.journal_key == f"reset-42:{name}" == json.loads(keyed.body)["data"]["journalKey"]
    assert keyed.event["journal_key"] == keyed.journal_key
    (kept,) = kim
    assert json.loads(kept.body)["data"]["recipient"] == KIM and kept.journal_key == KEYS["kim"]

    client.force_login(make_user(superuser=True))
    pages = [f"{WEBHOOKS}endpoint/{keyed.endpoint_id}/"]
    pages += [f"{WEBHOOKS}delivery/{d.pk}/" for d in dana]
    for page in pages:
        shown = unescape(client.get(page).content.decode())
        assert not names_dana(shown), page

    before = len(receiver.received)
    for found in dana:
        assert client.post(f"{WEBHOOKS}delivery/{found.pk}/replay/").status_code == 302
    replayed = [body for _, body in receiver.received[before:]]
    assert len(replayed) == 2
    assert all(json.loads(b)["data"]["recipient"] == name and not names_dana(b) for b in replayed)
    assert not names_dana(caplog.text) and "recipient.erased" in caplog.text


def test_erasing_again_rewrites_nothing_more(delivered):
    adapters = container.current()
    recipient_erase(adapters=adapters, address=DANA, actor="t")
    bodies = sorted(WebhookDelivery.objects.values_list("body", flat=True))
    assert recipient_erase(adapters=adapters, address=DANA, actor="t").webhook_deliveries == 0
    assert sorted(WebhookDelivery.objects.values_list("body", flat=True)) == bodies
