"""Shared pieces of the consumer tests: a pipeline over fakes and the real SQS adapter (moto)."""

from __future__ import annotations

import json

import pytest

from emailops.aws.sqs import SqsQueue
from emailops.core.compose import Composer
from emailops.core.pipeline import EmailPipeline, PipelineSettings
from emailops.core.ports import TemplateMapping
from emailops.core.rendering import Renderer
from emailops.core.retry import RetryPolicy
from tests.fakes import DictMappings, DictTemplates, InMemoryJournal, RecordingSender
from worker.consumer import Consumer, ConsumerSettings


class RecordingQueue(SqsQueue):
    """The real SQS adapter, noting the visibility changes the consumer asks for."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.visibility: list[int] = []
        self.extended: list[tuple[int, int]] = []
        self.receives: list[int] = []  # max_messages of each receive

    def receive(self, *, max_messages=10, wait_seconds=20):
        self.receives.append(max_messages)
        return super().receive(max_messages=max_messages, wait_seconds=wait_seconds)

    def change_visibility(self, message, seconds):
        self.visibility.append(seconds)
        super().change_visibility(message, seconds)

    def extend_visibility(self, messages, seconds):
        self.extended.append((len(messages), seconds))
        return super().extend_visibility(messages, seconds)


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


def make_consumer(
    queue, pipeline, dead_letter_url, *, backoff_base=10, backoff_cap=100, **overrides
):
    retry = RetryPolicy(backoff_base=backoff_base, backoff_cap=backoff_cap)
    return Consumer(
        queue=queue,
        pipeline=pipeline,
        lease_journal=pipeline.journal,
        settings=ConsumerSettings(
            **{"dead_letter_url": dead_letter_url, "retry": retry} | overrides
        ),
    )
