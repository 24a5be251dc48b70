"""Webhooks end to end on moto's server, with the real processes: ``consume_emails`` and
``consume_ses_events`` hand events to the Celery outbox on the real Redis, a ``celery worker``
fans them out and posts them to a local receiver. A send, its delivery and a bounce arrive as
three signed events that ``standardwebhooks`` verifies."""

from __future__ import annotations

import copy
import sys
import uuid

import pytest
from standardwebhooks.webhooks import Webhook

from emailops.core.delivery_events import encode_journal_key
from tests.celery_worker import BROKER
from tests.conftest import skip_or_fail
from tests.core.test_delivery_events import envelope, ses_event
from tests.e2e.test_consume_e2e import key_for
from tests.support.stack import wait_until
from tests.webhooks.conftest import Receiver
from tests.worker.test_tasks import redis_available

pytestmark = pytest.mark.e2e

SIM = "simulator.amazonses.com"
QUEUE = f"emailops-webhooks-e2e-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def e2e_stack_options() -> dict:
    return {
        "bucket": "emailops-webhooks-e2e",
        "events_queue": "email-ses-events",
        "extra_env": {
            "SES_SIMULATE_EVENTS": "true",
            "SES_EVENTS_VERIFY_SIGNATURES": "false",
            "WEBHOOK_OUTBOX": "celery",
            "WEBHOOK_QUEUE": QUEUE,
            "CELERY_BROKER_URL": BROKER,
            "CELERY_TASK_DEFAULT_QUEUE": QUEUE,
        },
    }


@pytest.fixture(scope="module")
def receiver():
    running = Receiver()
    yield running
    running.close()


@pytest.fixture(scope="module")
def webhooks(e2e_stack, receiver, tmp_path_factory):
    """The console database with one endpoint (its secret), and a webhook worker on it."""
    if not redis_available():
        skip_or_fail("Redis is not listening on 127.0.0.1:6379")
    database = tmp_path_factory.mktemp("webhooks-db") / "console.sqlite3"
    e2e_stack.env.update(e2e_stack.console_database(database))
    secret = e2e_stack.manage(
        "shell",
        "-c",
        "from emailops import container\n"
        "from webhooks.endpoints import endpoint_add\n"
        f"print(endpoint_add(adapters=container.current(), url={receiver.url!r})[1])",
    ).stdout.split()[-1]
    worker = e2e_stack.start_process(
        "webhook-worker",
        [sys.executable, "-m", "celery", "-A", "emailops", "worker", "--pool", "solo", "-Q", QUEUE],
    )
    yield secret
    worker.terminate(timeout=30)


def bounce_for(e2e_stack, key: str) -> str:
    """An SES Bounce for the row, as event publishing delivers it to the events queue."""
    row = e2e_stack.row(key)
    event = copy.deepcopy(ses_event("bounce.json"))
    event["mail"]["messageId"] = row["SesMessageId"]
    event["mail"]["tags"]["emailops-journal-key"] = [encode_journal_key(key)]
    return envelope(event, message_id=f"sns-bounce-{uuid.uuid4().hex[:6]}")


def test_a_send_its_delivery_and_a_bounce_arrive_as_three_signed_events(
    e2e_stack, webhooks, receiver
):
    body = {
        "messageId": "added-to-team",
        "recipients": [{"email": f"success@{SIM}"}],
        "context": {"teamName": "Hooks", "administrator": "Dave"},
    }
    e2e_stack.enqueue([body])
    e2e_stack.consume()
    e2e_stack.consume("consume_ses_events")  # the simulator's Send and Delivery
    key = key_for(body, f"success@{SIM}")
    e2e_stack.sqs.send_message(
        QueueUrl=e2e_stack.direct(e2e_stack.events_queue_url),
        MessageBody=bounce_for(e2e_stack, key),
    )
    e2e_stack.consume("consume_ses_events")

    assert wait_until(lambda: len(receiver.received) >= 3, timeout=60), receiver.received
    verified = [Webhook(webhooks).verify(body, headers) for headers, body in receiver.received]
    assert sorted(event["type"] for event in verified) == [
        "email.bounced",
        "email.delivered",
        "email.sent",
    ]
    assert {event["data"]["journalKey"] for event in verified} == {key}
    ids = [headers["webhook-id"] for headers, _ in receiver.received]
    assert len(set(ids)) == 3  # one id per (row, event)
