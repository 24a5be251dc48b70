"""The consume loop against moto's SQS, with the pipeline's ports faked where failures are needed."""

from __future__ import annotations

import json
import threading

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command

from emailops import wiring
from emailops.aws.sqs import SqsQueue
from emailops.core.compose import Composer
from emailops.core.errors import TransientError
from emailops.core.pipeline import EmailPipeline, PipelineSettings
from emailops.core.ports import TemplateMapping
from emailops.core.rendering import Renderer
from tests.fakes import DictMappings, DictTemplates, InMemoryJournal, RecordingSender
from worker.consumer import Consumer
from worker.wiring import build_consumer


class RecordingQueue(SqsQueue):
    """The real SQS adapter, noting the visibility changes the consumer asks for."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.visibility: list[int] = []

    def change_visibility(self, message, seconds):
        self.visibility.append(seconds)
        super().change_visibility(message, seconds)


def request(email: str, message_id: str = "welcome") -> str:
    return json.dumps({"messageId": message_id, "recipients": [{"email": email}]})


@pytest.fixture
def parts(aws):
    sender = RecordingSender()
    pipeline = EmailPipeline(
        composer=Composer(
            mappings=DictMappings(TemplateMapping("welcome", "w.html", "Hi")),
            templates=DictTemplates({"default/w.html": "<p>hi</p>"}),
            renderer=Renderer(),
        ),
        journal=InMemoryJournal(),
        sender=sender,
        settings=PipelineSettings(from_address="A <a@example.com>", lease_seconds=30),
    )
    queue = RecordingQueue(aws.sqs, aws.queue_url)
    return pipeline, sender, queue


def make_consumer(queue, pipeline, dead_letter_url):
    return Consumer(
        queue=queue,
        pipeline=pipeline,
        dead_letter_url=dead_letter_url,
        backoff_base=10,
        backoff_cap=100,
    )


def test_transient_failure_backs_off_and_keeps_the_message(aws, parts):
    pipeline, sender, queue = parts
    sender.errors.append(TransientError("send email", reason="Throttling"))
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=request("a@example.com"))
    stats = make_consumer(queue, pipeline, aws.dlq_url).run(
        stop=threading.Event(), until_empty=True, wait_time=0
    )
    assert stats.retried == 1 and stats.deleted == 0
    assert (
        len(queue.visibility) == 1 and 5 <= queue.visibility[0] <= 10
    )  # receive 1: base 10, jittered
    assert aws.queue_messages(aws.queue_url) == []  # invisible, not gone
    attrs = aws.sqs.get_queue_attributes(QueueUrl=aws.queue_url, AttributeNames=["All"])[
        "Attributes"
    ]
    assert attrs["ApproximateNumberOfMessagesNotVisible"] == "1"


def test_a_crashing_record_does_not_touch_the_rest_of_its_batch(aws, parts, monkeypatch):
    pipeline, sender, queue = parts
    real = pipeline.process

    def buggy(body, *, record_id=""):
        if "crash" in body:
            raise RuntimeError("boom")
        return real(body, record_id=record_id)

    monkeypatch.setattr(pipeline, "process", buggy)
    for email in ("one@example.com", "crash@example.com", "two@example.com"):
        aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=request(email))
    stats = make_consumer(queue, pipeline, aws.dlq_url).run(
        stop=threading.Event(), until_empty=True, wait_time=0
    )
    assert stats.deleted == 2 and stats.retried == 1
    assert sorted(e.to for e in sender.sent) == ["one@example.com", "two@example.com"]


def test_permanent_failure_without_a_dead_letter_queue_stays_on_the_queue(aws, parts):
    pipeline, _, queue = parts
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody="not json")
    stats = make_consumer(queue, pipeline, None).run(
        stop=threading.Event(), until_empty=True, wait_time=0
    )
    assert stats.dead_lettered == 0 and stats.retried == 1 and queue.visibility
    assert aws.queue_messages(aws.dlq_url) == []


def test_permanent_failure_is_dead_lettered_at_once_with_its_reason(aws, parts):
    pipeline, _, queue = parts
    aws.sqs.send_message(
        QueueUrl=aws.queue_url,
        MessageBody=request("x@example.com", "nope"),
        MessageAttributes={"producer": {"DataType": "String", "StringValue": "api"}},
    )
    stats = make_consumer(queue, pipeline, aws.dlq_url).run(
        stop=threading.Event(), until_empty=True, wait_time=0
    )
    assert stats.dead_lettered == 1
    (dead,) = aws.queue_messages(aws.dlq_url)
    assert "no such messageId" in dead["MessageAttributes"]["FailureReason"]["StringValue"]
    assert dead["MessageAttributes"]["producer"]["StringValue"] == "api"
    assert aws.queue_messages(aws.queue_url) == []


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


def test_build_consumer_reads_the_lease_and_dead_letter_queue_from_the_queue(aws):
    consumer = build_consumer()
    assert consumer.pipeline.settings.lease_seconds == 30
    assert consumer.dead_letter_url == aws.dlq_url


@pytest.mark.parametrize("name", ["EMAIL_SERVICE_QUEUE_URL", "JOURNAL_TABLE", "S3_BUCKET"])
def test_missing_settings_fail_at_start_up_naming_the_variable(aws, settings, name):
    setattr(settings, name, "")
    wiring.reset()
    with pytest.raises(ImproperlyConfigured, match=name):
        call_command("consume_emails", "--until-empty", "--wait-time", "0")


def test_sender_falls_back_to_the_pennsieve_domain(settings):
    settings.EMAIL_SENDER, settings.EMAIL_REPLY_TO, settings.PENNSIEVE_DOMAIN = (
        "",
        "",
        "pennsieve.io",
    )
    assert wiring.sender_addresses() == (
        "Pennsieve <support@pennsieve.io>",
        ("support@pennsieve.io",),
    )
    settings.PENNSIEVE_DOMAIN = ""
    with pytest.raises(ImproperlyConfigured, match="EMAIL_SENDER"):
        wiring.sender_addresses()


def test_a_non_ascii_sender_name_is_mime_encoded_for_ses(settings):
    settings.EMAIL_SENDER = "Pennsieve Über <support@pennsieve.io>"
    assert wiring.sender_addresses()[0] == "=?utf-8?q?Pennsieve_=C3=9Cber?= <support@pennsieve.io>"
    settings.EMAIL_SENDER = "Pennsieve <support@pennsieve.io>"
    assert wiring.sender_addresses()[0] == "Pennsieve <support@pennsieve.io>"
