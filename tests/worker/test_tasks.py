"""Celery tasks, eagerly and through a real Redis broker with an in-process worker."""

from __future__ import annotations

import socket
import uuid

import pytest

from emailops import container
from emailops.core.errors import InvalidRequest
from tests.conftest import fixture_body, skip_or_fail
from worker import tasks

REDIS_URL = "redis://127.0.0.1:6379/15"


def redis_available() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=1):
            return True
    except OSError:
        return False


def test_enqueue_task_rejects_a_bad_request_before_it_reaches_the_queue(aws):
    with pytest.raises(InvalidRequest, match="no recipients"):
        tasks.enqueue_email_request.apply(args=['{"messageId": "x", "recipients": []}']).get()
    assert aws.queue_messages(aws.queue_url) == []


def test_consume_task_sends_what_is_queued(aws):
    aws.load_samples()
    tasks.enqueue_email_request.apply(args=[fixture_body("multi-recipient.json")]).get()
    before = container.current()
    stats = tasks.consume_emails_batch.apply(kwargs={"max_messages": 10}).get()
    assert stats["received"] == 1 and stats["deleted"] == 1
    assert container.current() is before  # drained on a container of its own: none swapped
    assert sorted(m.destinations["ToAddresses"][0] for m in aws.sent_emails()) == [
        "Reviewer One <rev1@example.com>",
        "Reviewer Two <rev2@example.com>",
    ]


def test_tasks_run_on_a_real_redis_broker(aws):
    if not redis_available():
        skip_or_fail("Redis is not listening on 127.0.0.1:6379")
    from celery import Celery
    from celery.contrib.testing.worker import start_worker

    aws.load_samples()
    # A fresh app on Redis (db 15) gets the same shared tasks, with a result backend to read.
    redis_app = Celery("emailops-test", broker=REDIS_URL, backend=REDIS_URL)
    # A queue of this run's own: another test run on the machine must not take its tasks.
    redis_app.conf.task_default_queue = f"emailops-test-{uuid.uuid4().hex[:12]}"
    enqueue = redis_app.tasks[tasks.enqueue_email_request.name]
    consume = redis_app.tasks[tasks.consume_emails_batch.name]
    with start_worker(redis_app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        sqs_id = enqueue.delay(fixture_body("with-dedupe-id.json")).get(timeout=20)
        stats = consume.delay(10).get(timeout=30)
    assert sqs_id and stats["deleted"] == 1
    assert [m.subject for m in aws.sent_emails()] == ["You were added to the team Imaging"]


def test_a_database_hiccup_delivers_the_job_again(monkeypatch):
    """A lock or a dropped connection before the job is claimed must not leave it PENDING."""
    from types import SimpleNamespace

    from django.db import OperationalError

    calls = []

    def job_run(*, job_id, adapters):
        assert adapters is container.current()  # the task is the entry: it passes its container
        calls.append(job_id)
        if len(calls) == 1:
            raise OperationalError("database table is locked: templates_admin_job")
        return SimpleNamespace(state="SUCCEEDED")

    monkeypatch.setattr(tasks.engine, "job_run", job_run)
    assert tasks.run_job.apply(args=[7]).get() == "SUCCEEDED"
    assert calls == [7, 7]
