"""The consume loop against moto's SQS, with the pipeline's ports faked where failures are needed."""

from __future__ import annotations

import threading

import pytest
from botocore.exceptions import ClientError
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command

from emailops import container
from emailops.core.errors import TransientError
from emailops.core.pipeline import Action
from emailops.core.retry import STATE_ATTRIBUTE, RetryState
from tests.worker.conftest import make_consumer, request
from worker.inflight import Held
from worker.wiring import build_consumer


def run_until_empty(consumer, **kwargs):
    return consumer.run(stop=threading.Event(), until_empty=True, wait_time=0, **kwargs)


def test_transient_failure_is_re_enqueued_with_its_attempts_and_a_delay(aws, parts):
    pipeline, sender, queue = parts
    sender.errors.append(TransientError("send email", reason="Throttling"))
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=request("a@example.com"))
    consumer = make_consumer(queue, pipeline, aws.dlq_url, backoff_base=600, backoff_cap=900)
    stats = run_until_empty(consumer)
    assert stats.retried == 1 and stats.deleted == 0
    assert aws.queue_messages(aws.queue_url) == []  # the copy is delayed, not visible yet
    attrs = aws.sqs.get_queue_attributes(QueueUrl=aws.queue_url, AttributeNames=["All"])
    assert attrs["Attributes"]["ApproximateNumberOfMessagesDelayed"] == "1"
    assert attrs["Attributes"]["ApproximateNumberOfMessagesNotVisible"] == "0"  # original gone


def test_a_re_enqueued_copy_carries_its_state_and_starts_at_receive_one(aws, parts):
    pipeline, sender, queue = parts
    sender.errors.append(TransientError("send email", reason="Throttling"))
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=request("a@example.com"))
    consumer = make_consumer(queue, pipeline, aws.dlq_url, backoff_base=0, backoff_cap=0)
    (message,) = queue.receive(wait_seconds=0)
    outcome = consumer.handle(Held(message))
    assert outcome.action is Action.RETRY
    (copy,) = queue.receive(wait_seconds=5)  # its delay is one second
    state = RetryState.from_json(copy.string_attribute(STATE_ATTRIBUTE))
    assert state.attempts == 1 and "Throttling" in state.errors[0]
    assert copy.receive_count == 1 and copy.body == message.body


def test_a_record_near_max_receive_count_is_refreshed_not_processed(aws, parts):
    pipeline, sender, queue = parts
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=request("a@example.com"))
    consumer = make_consumer(queue, pipeline, aws.dlq_url, max_receive_count=3)
    (first,) = queue.receive(wait_seconds=0)
    queue.change_visibility(first, 0)
    stats = consumer.run(stop=threading.Event(), max_messages=1, wait_time=0)  # receive 2
    assert stats.refreshed == 1 and sender.sent == []  # refreshed as it was received
    (fresh,) = queue.receive(wait_seconds=0)
    assert fresh.receive_count == 1 and fresh.body == first.body


def test_a_crashing_record_does_not_touch_the_others(aws, parts, monkeypatch):
    pipeline, sender, queue = parts
    real = pipeline.process

    def buggy(body, **kwargs):
        if "crash" in body:
            raise RuntimeError("boom")
        return real(body, **kwargs)

    monkeypatch.setattr(pipeline, "process", buggy)
    for email in ("one@example.com", "crash@example.com", "two@example.com"):
        aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=request(email))
    stats = run_until_empty(make_consumer(queue, pipeline, aws.dlq_url, concurrency=3))
    assert stats.deleted == 2 and stats.retried == 1
    assert sorted(e.to for e in sender.sent) == ["one@example.com", "two@example.com"]


def test_permanent_failure_without_a_dead_letter_queue_stays_on_the_queue(aws, parts):
    pipeline, _, queue = parts
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody="not json")
    stats = run_until_empty(make_consumer(queue, pipeline, None))
    assert stats.dead_lettered == 0 and queue.visibility == [100]
    assert aws.queue_messages(aws.dlq_url) == []


def test_permanent_failure_is_dead_lettered_at_once_with_its_reason(aws, parts):
    pipeline, _, queue = parts
    aws.sqs.send_message(
        QueueUrl=aws.queue_url,
        MessageBody=request("x@example.com", "nope"),
        MessageAttributes={"producer": {"DataType": "String", "StringValue": "api"}},
    )
    stats = run_until_empty(make_consumer(queue, pipeline, aws.dlq_url))
    assert stats.dead_lettered == 1
    (dead,) = aws.queue_messages(aws.dlq_url)
    assert "no such messageId" in dead["MessageAttributes"]["FailureReason"]["StringValue"]
    assert dead["MessageAttributes"]["producer"]["StringValue"] == "api"
    assert STATE_ATTRIBUTE in dead["MessageAttributes"]
    assert aws.queue_messages(aws.queue_url) == []


def test_many_records_on_many_threads_are_each_sent_once(aws, parts):
    pipeline, sender, queue = parts
    for i in range(30):
        aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=request(f"u{i}@example.com"))
    stats = run_until_empty(make_consumer(queue, pipeline, aws.dlq_url, concurrency=8))
    assert sorted(e.to for e in sender.sent) == sorted(f"u{i}@example.com" for i in range(30))
    assert stats.deleted == 30 and aws.queue_messages(aws.queue_url) == []


def test_a_sequential_consumer_receives_full_batches_not_one_record_per_call(aws, parts):
    # Each receive is a billed call: one slot freed at a time must not become a receive of one.
    pipeline, sender, queue = parts
    aws.sqs.send_message_batch(
        QueueUrl=aws.queue_url,
        Entries=[{"Id": str(i), "MessageBody": request(f"u{i}@example.com")} for i in range(10)],
    )
    aws.sqs.send_message_batch(
        QueueUrl=aws.queue_url,
        Entries=[{"Id": str(i), "MessageBody": request(f"v{i}@example.com")} for i in range(10)],
    )
    stats = run_until_empty(make_consumer(queue, pipeline, aws.dlq_url, concurrency=1))
    assert stats.deleted == 20 and len(sender.sent) == 20
    assert set(queue.receives) == {10}, queue.receives


def test_max_messages_and_stop(aws, parts):
    pipeline, sender, queue = parts
    for i in range(5):
        aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=request(f"u{i}@example.com"))
    stats = make_consumer(queue, pipeline, aws.dlq_url).run(
        stop=threading.Event(), max_messages=2, batch_size=1, wait_time=0
    )
    assert stats.received == 2 and len(sender.sent) == 2
    stopped = threading.Event()
    stopped.set()
    assert make_consumer(queue, pipeline, aws.dlq_url).run(stop=stopped, wait_time=0).received == 0


def test_graceful_stop_finishes_in_flight_work_and_hands_back_the_rest(aws, parts):
    pipeline, sender, queue = parts
    sending, release = threading.Event(), threading.Event()
    real_send = sender.send

    def slow_send(email, *, before_send=None):
        before_send()  # the send starts: its slot taken, its claim checked
        sending.set()
        assert release.wait(10)
        return real_send(email)

    sender.send = slow_send
    for i in range(3):
        aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=request(f"u{i}@example.com"))
    consumer = make_consumer(queue, pipeline, aws.dlq_url, concurrency=1, stop_timeout=10)
    stop = threading.Event()
    result: list = []
    runner = threading.Thread(target=lambda: result.append(consumer.run(stop=stop, wait_time=0)))
    runner.start()
    assert sending.wait(10)  # one record is in flight, the others wait in the work queue
    stop.set()
    release.set()
    runner.join(15)
    assert not runner.is_alive()
    assert len(sender.sent) == 1 and result[0].deleted == 1
    # The two never started are visible again at once, not after their visibility timeout.
    assert len(aws.queue_messages(aws.queue_url)) == 2


def test_build_consumer_reads_the_lease_and_dead_letter_queue_from_the_queue(aws):
    consumer = build_consumer(adapters=container.current(), concurrency=4)
    assert consumer.pipeline.settings.lease_seconds == 30
    assert consumer.settings.dead_letter_url == aws.dlq_url
    assert consumer.settings.max_receive_count == 3


def test_a_queue_without_a_dead_letter_queue_is_refused_unless_allowed(aws, settings):
    settings.EMAIL_SERVICE_QUEUE_URL = aws.sqs.create_queue(QueueName="bare")["QueueUrl"]
    container.reset()
    with pytest.raises(ImproperlyConfigured, match="--allow-no-dead-letter-queue"):
        build_consumer(adapters=container.current(), concurrency=1)
    assert (
        build_consumer(
            adapters=container.current(), concurrency=1, allow_no_dead_letter_queue=True
        ).settings.dead_letter_url
        is None
    )


@pytest.mark.parametrize("name", ["EMAIL_SERVICE_QUEUE_URL", "JOURNAL_TABLE", "S3_BUCKET"])
def test_missing_settings_fail_at_start_up_naming_the_variable(aws, settings, name):
    setattr(settings, name, "")
    container.reset()
    with pytest.raises(ImproperlyConfigured, match=name):
        call_command("consume_emails", "--until-empty", "--wait-time", "0")


def test_sender_falls_back_to_the_pennsieve_domain(settings):
    settings.EMAIL_SENDER, settings.EMAIL_REPLY_TO, settings.PENNSIEVE_DOMAIN = (
        "",
        "",
        "pennsieve.io",
    )
    assert container.current().sender_addresses == (
        "Pennsieve <support@pennsieve.io>",
        ("support@pennsieve.io",),
    )
    settings.PENNSIEVE_DOMAIN = ""
    with pytest.raises(ImproperlyConfigured, match="EMAIL_SENDER"):
        _ = container.current().sender_addresses


def test_a_non_ascii_sender_name_is_mime_encoded_for_ses(settings):
    settings.EMAIL_SENDER = "Pennsieve Über <support@pennsieve.io>"
    assert (
        container.current().sender_addresses[0]
        == "=?utf-8?q?Pennsieve_=C3=9Cber?= <support@pennsieve.io>"
    )
    settings.EMAIL_SENDER = "Pennsieve <support@pennsieve.io>"
    assert container.current().sender_addresses[0] == "Pennsieve <support@pennsieve.io>"


# --- a retry whose copy cannot be made --------------------------------------------------------


class SqsTrouble:
    """The SQS client, with some operations failing as in an outage."""

    def __init__(self, client, *failing: str) -> None:
        self.client, self.failing = client, set(failing)

    def __getattr__(self, name):
        if name in self.failing:

            def fail(**_):
                raise ClientError(
                    {"Error": {"Code": "ServiceUnavailable"}, "ResponseMetadata": {}}, name
                )

            return fail
        return getattr(self.client, name)


class Clock:
    def __init__(self) -> None:
        self.now = 1_750_000_000.0

    def __call__(self) -> float:
        return self.now


MARK_DOWN = TransientError("mark journal row SENT", reason="ServiceUnavailable")


@pytest.fixture
def no_pauses(monkeypatch):
    monkeypatch.setattr("emailops.aws.sqs._MOVE_PAUSES", (None,))


def test_an_accepted_send_is_not_lost_when_the_retry_copy_cannot_be_sent(aws, parts, no_pauses):
    pipeline, sender, queue = parts
    pipeline.clock, pipeline.sleep = Clock(), lambda _: None
    pipeline.journal.fail_next["mark_sent"] = [MARK_DOWN] * 5  # SES accepted, no SENT mark
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=request("a@example.com"))
    consumer = make_consumer(queue, pipeline, aws.dlq_url, backoff_base=1, backoff_cap=1)
    (message,) = queue.receive(wait_seconds=0)
    queue.client = SqsTrouble(aws.sqs, "send_message")  # the copy with the state cannot go
    assert consumer.handle(Held(message)).action is Action.RETRY
    queue.client = aws.sqs
    # The original comes back without the state, after the claim's lease has ended.
    pipeline.clock.now += 10 * 30
    queue.change_visibility(message, 0)
    (again,) = queue.receive(wait_seconds=0)
    assert again.message_id == message.message_id
    assert consumer.handle(Held(again)).action is Action.DELETE
    assert len(sender.sent) == 1  # marked SENT when the copy failed: never sent again


def test_a_record_too_large_to_carry_its_state_is_dead_lettered_not_retried_forever(aws, parts):
    pipeline, sender, queue = parts
    sender.errors.append(TransientError("send email", reason="Throttling"))
    body = request("a@example.com")
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=body)
    queue.max_message_bytes = len(body) + 100  # no room for EmailOpsState beside it
    consumer = make_consumer(queue, pipeline, aws.dlq_url)
    (message,) = queue.receive(wait_seconds=0)
    assert consumer.handle(Held(message)).action is Action.RETRY
    (dead,) = aws.queue_messages(aws.dlq_url)
    reason = dead["MessageAttributes"]["FailureReason"]["StringValue"]
    assert reason.startswith("cannot be retried: copy message")  # as much as fits
    assert aws.queue_messages(aws.queue_url) == []


def test_a_copy_whose_original_cannot_be_deleted_is_decided_first(aws, parts, no_pauses):
    pipeline, sender, queue = parts
    sender.errors.append(TransientError("send email", reason="Throttling"))
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=request("a@example.com"))
    consumer = make_consumer(queue, pipeline, aws.dlq_url, backoff_base=1, backoff_cap=1)
    (message,) = queue.receive(wait_seconds=0)
    queue.client = SqsTrouble(aws.sqs, "delete_message")
    assert consumer.handle(Held(message)).action is Action.RETRY
    queue.client = aws.sqs
    # Both would come back after the same one-second back-off and race; only the copy does.
    back = queue.receive(max_messages=10, wait_seconds=3)
    assert len(back) == 1 and back[0].message_id != message.message_id
    assert RetryState.from_json(back[0].string_attribute(STATE_ATTRIBUTE)).attempts == 1
