"""Shared pieces of the consumer tests: a pipeline over fakes and the real SQS adapter (moto)."""

from __future__ import annotations

import json
import re
import threading
import time
from concurrent.futures import thread as futures_thread

import pytest

from emailops.aws.sqs import SqsQueue
from emailops.core.compose import Composer
from emailops.core.pipeline import EmailPipeline, PipelineSettings
from emailops.core.ports import TemplateMapping
from emailops.core.rendering import Renderer
from emailops.core.retry import RetryPolicy
from emailops.pipeline_build import send_policies
from emailops.queue_state import state_seal
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
        policies=send_policies(),
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
        seal=state_seal(),
        settings=ConsumerSettings(
            **{"dead_letter_url": dead_letter_url, "retry": retry} | overrides
        ),
    )


# A consumer thread that outlives its test keeps working after the in-process moto has gone and
# calls real AWS (seen in CI: a hung worker released at the end of its test logged
# EndpointConnectionError for sqs.us-east-1.amazonaws.com during a later test). The threads the
# consumers' supervision starts (worker/queue_worker.py), by name:
CONSUMER_THREAD = re.compile(
    r"(receiver|worker|lease-keeper|consumer-stats|watchdog|events-(loop|receiver|counters))(-\d+)?"
)
THREAD_GRACE_SECONDS = 5.0


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """Fail a test whose call leaves a consumer thread or a non-daemon thread it started running.
    Checked before the test's fixtures are torn down (moto is still there); the threads get a
    few seconds to finish. ``@pytest.mark.leaves_threads("name", reason=...)`` names one the
    product is known to leave idle."""
    before = set(threading.enumerate())
    try:
        result = yield
    except BaseException:
        left_running(before, set())  # failed already: only keep its threads from the next test
        raise
    known = {name for mark in item.iter_markers("leaves_threads") for name in mark.args}
    left = left_running(before, known)
    if left:
        pytest.fail(f"threads the test started are still running: {left}")
    return result


def holds_up_exit(thread: threading.Thread) -> bool:
    """Non-daemon, and not an executor's worker (those are told to stop at exit and do)."""
    return not thread.daemon and getattr(thread, "_target", None) is not futures_thread._worker


def left_running(before: set[threading.Thread], known: set[str]) -> list[str]:
    """Names of the threads started since ``before`` that matter and are still alive after the
    grace: consumer threads, and non-daemon ones (they would hold up the interpreter's exit)."""
    deadline = time.monotonic() + THREAD_GRACE_SECONDS
    left = []
    for thread in set(threading.enumerate()) - before:
        if thread.name in known or not (
            CONSUMER_THREAD.fullmatch(thread.name) or holds_up_exit(thread)
        ):
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            left.append(thread.name)
    return sorted(left)
