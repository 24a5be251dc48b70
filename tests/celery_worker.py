"""A real Celery worker for tests: the project's app, in this process (so in-process moto serves
it), on the real Redis broker, reading a queue of this session's own so that other workers on
the machine never take these tasks. Import ``celery_worker`` into a test module to use it."""

from __future__ import annotations

import time
import uuid

import pytest

from tests.conftest import skip_or_fail
from tests.worker.test_tasks import redis_available

BROKER = "redis://127.0.0.1:6379/15"


@pytest.fixture(scope="module")
def celery_worker():
    if not redis_available():
        skip_or_fail("Redis is not listening on 127.0.0.1:6379")
    from celery.contrib.testing.worker import start_worker

    from emailops.celery import app

    saved = {k: app.conf[k] for k in ("broker_url", "task_default_queue", "task_always_eager")}
    queue = f"emailops-jobs-test-{uuid.uuid4().hex[:12]}"
    app.conf.update(broker_url=BROKER, task_default_queue=queue, task_always_eager=False)
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        yield app
    app.conf.update(saved)


def wait_until_finished(job, seconds: float = 30):
    """Poll the job row (bounded) until a worker finished it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.is_finished:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job #{job.pk} still {job.state} after {seconds} s")
