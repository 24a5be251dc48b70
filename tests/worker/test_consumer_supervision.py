"""The email consumer's threads beat: a worker stuck on one record is reported hung (not only a
dead one), what it holds is handed back, and the consumer stops unhealthy."""

from __future__ import annotations

import threading

from tests.support.stack import wait_until
from tests.worker.conftest import make_consumer, request
from tests.worker.test_consumer_failures import run_bounded


def test_a_worker_stuck_on_a_record_is_reported_hung(aws, parts, caplog):
    pipeline, sender, queue = parts
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=request("u@example.com"))
    entered, release = threading.Event(), threading.Event()

    def stuck(*args, **kwargs):
        entered.set()
        release.wait(30)  # a send on a connection that never answers
        raise AssertionError("released only after the test")

    pipeline.process = stuck
    consumer = make_consumer(
        queue, pipeline, aws.dlq_url, concurrency=1, hung_seconds=1.0, stop_timeout=0.5
    )
    try:
        run_bounded(consumer, seconds=20)  # no until_empty: only the hang ends it
        assert entered.is_set()
        assert consumer.failure == "worker-0" and not consumer.health.healthy
        assert "consumer.thread_hung" in caplog.text
        assert sender.sent == [] and len(aws.queue_messages(aws.queue_url)) == 1  # handed back
    finally:
        # Released, the worker settles its record (SQS calls): before moto goes, not after.
        release.set()
        assert wait_until(lambda: len(consumer.inflight) == 0, timeout=15)
