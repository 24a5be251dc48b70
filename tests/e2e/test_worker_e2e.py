"""End to end: a `celery -A emailops worker` process on the real Redis runs a redrive job that a
separate process (`manage.py shell`, standing in for the console) dispatched; AWS is moto's server
shared by all three processes, the console's database an SQLite file they share.

The worker reads a queue of this test's own, so other workers on the machine never take the task.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
import uuid

import pytest

from tests.celery_worker import BROKER
from tests.conftest import skip_or_fail
from tests.worker.test_tasks import redis_available

pytestmark = pytest.mark.e2e

DISPATCH = """
from templates_admin.jobs.dlq import redrive_inputs
from jobs.engine import job_create
job = job_create(kind="dlq_redrive", inputs=redrive_inputs(ids=None, redrive_all=True, rate=20),
                 user=None, origin="e2e")
print(job.pk)
"""


@pytest.fixture
def worker(e2e_stack, tmp_path):
    if not redis_available():
        skip_or_fail("Redis is not listening on 127.0.0.1:6379")
    database = tmp_path / "console.sqlite3"
    env = {
        **e2e_stack.console_database(database),
        "CELERY_BROKER_URL": BROKER,
        "CELERY_TASK_DEFAULT_QUEUE": f"emailops-e2e-{uuid.uuid4().hex[:12]}",
    }
    process = e2e_stack.start_process(
        "celery-worker",
        [sys.executable, "-m", "celery", "-A", "emailops", "worker", "--pool", "solo"],
        env=env,
    )
    yield env, database, process
    process.terminate(timeout=30)
    process.cleanup()


def job_state(database, job_id: int) -> tuple[str, str, int]:
    with sqlite3.connect(database) as db:
        return db.execute(
            "SELECT state, error, done FROM templates_admin_job WHERE id = ?", (job_id,)
        ).fetchone()


def test_a_redrive_dispatched_elsewhere_runs_on_the_worker_process(e2e_stack, worker):
    env, database, process = worker
    # Only this test's dead letter: whatever else the module's stack holds is not ours.
    e2e_stack.purge()
    body = {"messageId": "added-to-team", "recipients": [{"email": "w@example.com"}]}
    e2e_stack.sqs.send_message(
        QueueUrl=e2e_stack.dlq_url,
        MessageBody=json.dumps(body),
        MessageAttributes={
            "FailureReason": {"DataType": "String", "StringValue": "boom"},
            "EmailOpsState": {"DataType": "String", "StringValue": '{"attempts": 5}'},
        },
    )
    shell = e2e_stack.manage("shell", "-c", DISPATCH, env=env)
    job_id = int(shell.stdout.strip().splitlines()[-1])
    deadline = time.monotonic() + 60
    state = job_state(database, job_id)
    while state[0] not in ("SUCCEEDED", "FAILED") and time.monotonic() < deadline:
        time.sleep(0.2)
        state = job_state(database, job_id)
    assert state == ("SUCCEEDED", "", 1), process.output()[-3000:]
    response = e2e_stack.sqs.receive_message(
        QueueUrl=e2e_stack.queue_url, MessageAttributeNames=["All"], MaxNumberOfMessages=10
    )
    (message,) = response["Messages"]
    assert json.loads(message["Body"]) == body
    assert set(message["MessageAttributes"]) == {"EmailOpsState"}
