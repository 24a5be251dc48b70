"""The events consumer runs on the shared queue worker: its threads are watched (a hung or dead
one is reported and the command exits non-zero), its back-off is RETRY_BACKOFF_*'s, and
--max-messages is a budget of its own, not a reservation kept in its counters."""

from __future__ import annotations

import threading

import pytest
from django.core.management import call_command

from emailops import container
from emailops.aws.sqs import SqsQueue
from emailops.core.delivery_handler import EventAction, EventOutcome
from emailops.core.errors import ConfigurationFault
from emailops.core.retry import RetryPolicy
from tests.support.stack import wait_until
from tests.worker.test_events_consumer import BatchRecorder, BlockingQueue
from worker.events_consumer import EventsConsumer, build_events_consumer
from worker.queue_worker import ExitCode, exit_status


class VisibilityQueue(SqsQueue):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.visibility: list[int] = []

    def change_visibility(self, message, seconds):
        self.visibility.append(seconds)
        super().change_visibility(message, seconds)


class Hanging:
    """A handler stuck on one batch (a dead connection with no timeout)."""

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()

    def handle_batch(self, messages, *, run):
        self.entered.set()
        self.release.wait(30)
        return [EventOutcome(EventAction.DELETE, result="applied") for _ in messages]


def visible(aws, url: str) -> int:
    attributes = aws.sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"])


def test_a_hung_loop_is_reported_and_its_batch_handed_back(aws_events):
    url = aws_events.events_queue_url
    aws_events.sqs.send_message(QueueUrl=url, MessageBody="e0")
    handler = Hanging()
    consumer = EventsConsumer(
        queue=SqsQueue(aws_events.sqs, url),
        handler=handler,
        dead_letter_url=None,
        hung_seconds=1.0,
        stop_timeout=0.5,
    )
    try:
        consumer.run(stop=threading.Event(), until_empty=True, wait_time=0)
        assert handler.entered.is_set()
        assert consumer.failure == "events-worker-0"
        assert not consumer.health.healthy and "hung" in consumer.health.fault
        assert visible(aws_events, url) == 1  # handed back at once, not after its timeout
    finally:
        handler.release.set()


def test_a_dead_loop_makes_the_command_exit_non_zero(aws_events, monkeypatch):
    def broken(self, **kwargs):
        raise RuntimeError("a bug in the receive path")

    monkeypatch.setattr(SqsQueue, "receive", broken)
    with pytest.raises(SystemExit) as exited:
        call_command("consume_ses_events", "--until-empty", "--wait-time", "0")
    assert exited.value.code == ExitCode.THREAD_FAILED == 4


def test_a_retried_event_backs_off_by_retry_backoff_settings(aws_events, settings):
    settings.RETRY_BACKOFF_BASE_SECONDS = 4
    settings.RETRY_BACKOFF_CAP_SECONDS = 4
    settings.RETRY_MAX_SECONDS = 123
    assert build_events_consumer(adapters=container.current()).retry == RetryPolicy(4, 4, 123)

    url = aws_events.events_queue_url
    aws_events.sqs.send_message(QueueUrl=url, MessageBody="retry-me")
    queue = VisibilityQueue(aws_events.sqs, url)
    consumer = EventsConsumer(
        queue=queue, handler=BatchRecorder(), dead_letter_url=None, retry=RetryPolicy(4, 4)
    )
    stats = consumer.run(stop=threading.Event(), until_empty=True, wait_time=0)
    assert stats.retried == 1
    assert len(queue.visibility) == 1 and 2 <= queue.visibility[0] <= 4  # not the old 30 s


def test_max_messages_is_a_budget_not_a_count_of_what_was_received(aws_events):
    url = aws_events.events_queue_url
    for i in range(5):
        aws_events.sqs.send_message(QueueUrl=url, MessageBody=f"e{i}")
    handler = BatchRecorder()
    consumer = EventsConsumer(
        queue=container.current().events_queue, handler=handler, dead_letter_url=None
    )
    stats = consumer.run(stop=threading.Event(), max_messages=3, wait_time=0)
    assert stats.received == stats.applied == 3
    assert sum(len(batch) for batch in handler.batches) == 3


def test_the_counters_say_only_what_was_received_while_a_poll_is_out(aws_events):
    queue = BlockingQueue(aws_events.sqs, aws_events.events_queue_url)
    consumer = EventsConsumer(queue=queue, handler=BatchRecorder(), dead_letter_url=None)
    stop = threading.Event()
    loop = threading.Thread(target=consumer.run, kwargs={"stop": stop}, daemon=True)
    loop.start()
    try:
        assert queue.polling.wait(10)
        assert consumer.stats.received == 0  # the receive's reservation is not a received one
    finally:
        stop.set()
        queue.answer.set()
        loop.join(10)
    assert wait_until(lambda: not loop.is_alive(), timeout=10)


class RefusedOnce(SqsQueue):
    """The real adapter, whose first receive is refused as a missing permission would be."""

    def __init__(self, *args, health=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls, self.healthy_at_retry = 0, None
        self.health = health

    def receive(self, *, max_messages=10, wait_seconds=20):
        self.calls += 1
        if self.calls == 1:
            raise ConfigurationFault("receive messages", reason="AccessDenied", fix="grant it")
        if self.calls == 2:
            self.healthy_at_retry = self.health.healthy
        return super().receive(max_messages=max_messages, wait_seconds=wait_seconds)


def test_a_configuration_fault_receiving_makes_the_events_consumer_unhealthy_until_it_applies(
    aws_events, caplog
):
    """As for the email consumer: an operator's fault is one clear ERROR and an unhealthy
    consumer (exit 3 if stopped so), healthy again once an event is applied."""
    url = aws_events.events_queue_url
    aws_events.sqs.send_message(QueueUrl=url, MessageBody="e0")
    queue = RefusedOnce(aws_events.sqs, url)
    consumer = EventsConsumer(queue=queue, handler=BatchRecorder(), dead_letter_url=None)
    queue.health = consumer.health
    stats = consumer.run(stop=threading.Event(), until_empty=True, wait_time=0)
    assert queue.healthy_at_retry is False and "consumer.configuration_fault" in caplog.text
    assert stats.applied == 1 and consumer.health.healthy
    assert exit_status(consumer.failure, consumer.health)[0] is ExitCode.OK
