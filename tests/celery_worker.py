"""A real Celery worker for tests: the project's app, in this process (so in-process moto serves
it), on the real Redis broker, reading a queue of this session's own so that other workers on
the machine never take these tasks. Import ``celery_worker`` into a test module to use it."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator

import pytest

from tests.conftest import skip_or_fail
from tests.worker.test_tasks import redis_available

BROKER = "redis://127.0.0.1:6379/15"


@contextlib.contextmanager
def using_broker(app, url: str, **conf) -> Iterator[None]:
    """Point ``app`` at another broker (and queue) for a while. Its connection pool and its AMQP
    helper (which caches the producer pool and the queue names) are dropped on the way in and out,
    or they would keep sending to the previous broker and queue."""

    def reset() -> None:
        app._pool = None
        app.__dict__.pop("amqp", None)

    saved = {k: app.conf[k] for k in ("broker_url", *conf)}
    app.conf.update(broker_url=url, **conf)
    reset()
    try:
        yield
    finally:
        app.conf.update(saved)
        reset()


@pytest.fixture(scope="module")
def celery_worker():
    if not redis_available():
        skip_or_fail("Redis is not listening on 127.0.0.1:6379")
    from celery.contrib.testing.worker import start_worker

    from emailops.celery import app

    queue = f"emailops-jobs-test-{uuid.uuid4().hex[:12]}"
    with (
        using_broker(app, BROKER, task_default_queue=queue, task_always_eager=False),
        start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10),
    ):
        yield app


def wait_until_finished(job, seconds: float = 30):
    """Poll the job row (bounded) until a worker finished it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.is_finished:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job #{job.pk} still {job.state} after {seconds} s")
