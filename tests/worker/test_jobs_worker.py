"""Each job kind, and beat's checks, through a real Celery worker on the real Redis broker.

The worker runs in this process (``celery.contrib.testing.worker.start_worker``) so that
in-process moto serves it; the broker is Redis, on a queue name of this test session's own, so
other workers on this machine never take these tasks. Jobs are dispatched exactly as the console
does: ``job_create`` hands the id to ``worker.run_job`` once the job row is committed.
"""

from __future__ import annotations

import json
import time

import pytest

from jobs.engine import job_create
from jobs.models import Job
from monitoring import checks as monitoring
from templates_admin.jobs import bulk_resend, dlq
from templates_admin.models import EmailAction
from tests.celery_worker import celery_worker  # noqa: F401 (a fixture)
from tests.celery_worker import wait_until_finished as finished
from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker")]


def test_redrive_runs_on_the_worker(aws, make_user):
    message_id = aws.sqs.send_message(
        QueueUrl=aws.dlq_url,
        MessageBody=json.dumps({"messageId": "m", "recipients": [{"email": "a@example.com"}]}),
        MessageAttributes={
            "FailureReason": {"DataType": "String", "StringValue": "boom"},
            "EmailOpsState": {"DataType": "String", "StringValue": '{"attempts": 2}'},
        },
    )["MessageId"]
    job = job_create(
        kind=Job.Kind.DLQ_REDRIVE,
        inputs=dlq.redrive_inputs(ids=[message_id], redrive_all=False, rate=20),
        user=make_user("Support leads"),
    )
    job = finished(job)
    assert job.state == Job.State.SUCCEEDED, job.error
    assert job.runs == 1 and job.done == job.total == 1
    (moved,) = aws.queue_messages(aws.queue_url)
    assert set(moved["MessageAttributes"]) == {"EmailOpsState"}


def test_bulk_resend_runs_on_the_worker(aws, make_user):
    put_rows(
        aws.dynamodb,
        "email-journal",
        [journal_row("a@example.com", at=BASE_TIME, key="k1", status="FAILED", Error="x")],
    )
    from datetime import UTC, datetime

    job = job_create(
        kind=Job.Kind.BULK_RESEND,
        inputs=bulk_resend.bulk_resend_inputs(
            message_id="added-to-team",
            since=datetime.fromtimestamp(BASE_TIME - 10, UTC),
            until=datetime.fromtimestamp(BASE_TIME + 10, UTC),
            selections=["FAILED"],
            reason="outage",
            rate=20,
        ),
        user=make_user("Support leads"),
    )
    job = finished(job)
    assert job.state == Job.State.SUCCEEDED, job.error
    assert EmailAction.objects.get().original_key == "k1"
    assert len(aws.queue_messages(aws.queue_url)) == 1


def test_template_check_runs_on_the_worker(aws, make_user):
    aws.load_samples()
    job = job_create(kind=Job.Kind.TEMPLATE_CHECK, inputs={}, user=make_user("Template owners"))
    job = finished(job)
    assert job.state == Job.State.SUCCEEDED and job.result["renders"] == 7


def test_beat_tasks_run_on_the_worker(aws):
    from worker import tasks

    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody="{}")
    tasks.check_dead_letter_depth.delay()
    tasks.find_stuck_claims.delay()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        dlq_reading = monitoring.reading(monitoring.DLQ_DEPTH)
        stuck = monitoring.reading(monitoring.STUCK_CLAIMS)
        if dlq_reading and stuck:
            break
        time.sleep(0.1)
    assert dlq_reading and dlq_reading.value["depth"] == 1
    assert stuck and stuck.value["count"] == 0
