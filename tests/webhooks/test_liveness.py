"""`webhooks add` and the console's add page say in one line when nothing would deliver: the
outbox is off, or no worker on the webhook queue was seen lately. A worker on that queue records
that it is there: at its start, when it runs beat's heartbeat, and (throttled) when it fans out."""

from __future__ import annotations

from datetime import timedelta
from html import unescape
from io import StringIO
from types import SimpleNamespace

import pytest
from celery import Celery
from django.core.management import call_command
from django.db import OperationalError
from django.utils import timezone

from emailops.core.webhooks import sent_event
from monitoring.models import OpsReading
from tests.journal_factory import BASE_TIME
from webhooks import liveness
from worker import tasks

pytestmark = pytest.mark.django_db

URL = "http://127.0.0.1:9/hooks"
ADD_PAGE = "/admin/templates_admin/webhookspage/add/"


@pytest.fixture
def on(settings, loopback_webhooks):
    """The outbox on (the product's default; the suite turns it off), on a queue of the test's."""
    settings.WEBHOOK_OUTBOX = "celery"
    settings.WEBHOOK_QUEUE = "emailops-webhooks-liveness"
    liveness._recorded.clear()
    return settings


def add(url: str = URL) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("webhooks", "add", url, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning:")]


def test_add_says_so_when_the_outbox_is_off(on):
    on.WEBHOOK_OUTBOX = "off"
    tasks.webhook_heartbeat()  # a worker there does not help: nothing is emitted
    out, err = add()
    assert "secret (shown once" in out
    assert warnings(err) == [
        "warning: nothing will be delivered: WEBHOOK_OUTBOX=off emits no webhook events "
        "(endpoints get only test events)"
    ]


def test_add_says_so_when_no_worker_was_ever_seen_on_the_queue(on):
    (line,) = warnings(add()[1])
    assert (
        "no webhook worker seen on queue emailops-webhooks-liveness in the last 5 minutes" in line
    )


def test_add_is_silent_after_a_heartbeat(on):
    tasks.webhook_heartbeat()
    assert warnings(add()[1]) == []


def test_a_heartbeat_older_than_five_minutes_is_not_lately(on):
    liveness.worker_seen(queue=on.WEBHOOK_QUEUE, now=timezone.now() - timedelta(minutes=6))
    assert len(warnings(add()[1])) == 1
    liveness.worker_seen(queue=on.WEBHOOK_QUEUE, now=timezone.now() - timedelta(minutes=4))
    assert warnings(add()[1]) == []


def test_a_worker_seen_on_another_queue_is_not_this_ones(on):
    liveness.worker_seen(queue="emailops-devstack-8001-webhooks", now=timezone.now())
    assert len(warnings(add()[1])) == 1


def test_a_long_queue_name_still_has_a_reading(on):
    on.WEBHOOK_QUEUE = "emailops-webhooks-" + "x" * 60
    tasks.webhook_heartbeat()
    assert warnings(add()[1]) == []


def worker_on(*queues: str) -> SimpleNamespace:
    """What worker_ready hands its receivers: the consumer, whose app reads ``queues`` (-Q)."""
    app = Celery("liveness-test")
    app.amqp.queues.select(list(queues))
    return SimpleNamespace(app=app)


def test_a_worker_starting_on_the_webhook_queue_is_seen_at_once(on):
    tasks._webhook_worker_ready(worker_on("emailops-devstack-9-jobs"))
    assert not OpsReading.objects.filter(name__startswith="webhook_worker:").exists()
    assert len(warnings(add()[1])) == 1
    tasks._webhook_worker_ready(worker_on("emailops", on.WEBHOOK_QUEUE))
    assert warnings(add()[1]) == []


def test_fanning_out_records_at_most_once_a_minute(on, monkeypatch):
    writes = []
    real = OpsReading.objects.update_or_create
    monkeypatch.setattr(
        OpsReading.objects, "update_or_create", lambda **kw: writes.append(kw) or real(**kw)
    )
    now = timezone.now()
    for seconds in (0, 10, 59, 61):
        liveness.worker_seen(
            queue=on.WEBHOOK_QUEUE, now=now + timedelta(seconds=seconds), throttle=True
        )
    assert [w["defaults"]["at"] - now for w in writes] == [timedelta(0), timedelta(seconds=61)]


def test_the_fan_out_task_keeps_the_worker_seen(aws, on):
    event = sent_event("row-key", ses_message_id="ses-1", sent_at=BASE_TIME)
    assert tasks.webhook_fan_out(event.to_dict()) == []  # no row, no endpoint: nothing to deliver
    assert warnings(add()[1]) == []


def test_a_liveness_write_that_fails_never_holds_back_the_deliveries(aws, on, monkeypatch):
    """Observed on the local stack: two fan-outs at once, the liveness write of one got "database
    is locked", and its deliveries, already created, were never attempted."""
    monkeypatch.setattr(tasks.webhook_outbox, "fan_out", lambda event, **_: [7, 8])

    def locked(**_):
        raise OperationalError("database is locked")

    monkeypatch.setattr(tasks.webhook_liveness, "worker_seen", locked)
    attempted = []
    monkeypatch.setattr(
        tasks.webhook_deliver, "apply_async", lambda args, **kw: attempted.append(args[0])
    )
    event = sent_event("row-key", ses_message_id="ses-1", sent_at=BASE_TIME)
    assert tasks.webhook_fan_out(event.to_dict()) == [7, 8]
    assert attempted == [7, 8]


def test_beat_sends_the_heartbeat_to_the_webhook_queue_only_with_the_outbox_on(on):
    from emailops.celery import WEBHOOK_HEARTBEAT_SECONDS, _beat_schedule

    app = Celery("liveness-beat-test")
    _beat_schedule(app)
    entry = app.conf.beat_schedule["webhook-heartbeat"]
    assert entry["task"] == "worker.webhook_heartbeat" == tasks.webhook_heartbeat.name
    assert entry["options"]["queue"] == "emailops-webhooks-liveness"
    assert entry["schedule"] == WEBHOOK_HEARTBEAT_SECONDS
    assert timedelta(seconds=WEBHOOK_HEARTBEAT_SECONDS) * 4 < liveness.SEEN_WITHIN
    on.WEBHOOK_OUTBOX = "off"
    _beat_schedule(app)
    assert "webhook-heartbeat" not in app.conf.beat_schedule


def test_the_console_add_page_says_so_in_one_line(on, client, make_user):
    client.force_login(make_user(superuser=True))
    page = unescape(client.get(ADD_PAGE).content.decode())
    assert page.count('id="webhooks-delivery-gap"') == 1
    assert "no webhook worker seen on queue emailops-webhooks-liveness" in page
    tasks.webhook_heartbeat()
    assert 'id="webhooks-delivery-gap"' not in client.get(ADD_PAGE).content.decode()


@pytest.mark.parametrize("development", [True, False])
def test_the_url_help_says_what_the_check_accepts(settings, client, make_user, development):
    """The help said "HTTPS … no loopback address" while development accepts http://127.0.0.1."""
    from emailops import container

    settings.WEBHOOK_ALLOW_LOOPBACK = development
    container.reset()
    client.force_login(make_user(superuser=True))

    page = client.get(ADD_PAGE).content.decode()

    assert ("also http to this machine, e.g. http://127.0.0.1:9000/hook" in page) is development
    assert ("never a private, shared, loopback or link-local one" in page) is not development
