"""Leases under slow SES and hung or failing visibility calls, producer state that cannot be read,
and a stop in the middle of a large request. Sizes: FAULTS_SLOW_SES_REQUESTS (16),
FAULTS_POISON_REQUESTS (30), FAULTS_STOP_RECIPIENTS (200)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from tests.faults.conftest import knob
from tests.faults.workload import FAST_RETRIES, expected_keys, requests
from tests.support.aws_proxy import (
    SES_SEND_OPERATIONS,
    VISIBILITY_OPERATIONS,
    hung,
    latency,
    visibility_failures,
)
from tests.support.stack import Stack, wait_until

pytestmark = pytest.mark.faults


def sends_per_recipient(proxy) -> Counter[str]:
    return Counter(r for call in proxy.ses_sends() for r in call.recipients)


def report(name: str, expected: dict[str, str], proxy, stack: Stack, **extra: object) -> dict:
    sends = sends_per_recipient(proxy)
    statuses = stack.journal_statuses()
    figures = {
        "recipients": len(expected),
        "sent once": sum(1 for a in expected if sends[a] == 1),
        "sent twice or more": sum(1 for a in expected if sends[a] > 1),
        "never sent": sum(1 for a in expected if not sends[a]),
        "rows SENT": sum(1 for k in expected.values() if statuses.get(k) == "SENT"),
        "dead-lettered": stack.depth(stack.dlq_url),
        "left on the queue": stack.depth(),
        **extra,
    }
    print(f"\n--- {name}: " + ", ".join(f"{k} {v}" for k, v in figures.items()))
    return figures


@contextlib.contextmanager
def rows_without_status(stack: Stack) -> Iterator[set[str]]:
    """Keys of journal rows that any Scan, taken over and over meanwhile, read without a Status:
    a row holding only its Id (one was once seen after a SIGTERM mid-record)."""
    seen: set[str] = set()
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.05):
            seen.update(key for key, status in stack.journal_statuses().items() if not status)

    watcher = threading.Thread(target=watch, name="row-watcher", daemon=True)
    watcher.start()
    try:
        yield seen
    finally:
        done.set()
        watcher.join(timeout=30)


def test_slow_ses_with_failing_and_hung_visibility_changes(moto_server, proxy):
    """Every send takes 7 s on a 6 s visibility; 30 % of visibility changes fail, 30 % hang."""
    stack = Stack(
        moto_server,
        endpoint=proxy.url,
        queue="slow-queue",
        journal_table="slow-journal",
        bucket="slow-templates",
        visibility_timeout=6,
        extra_env=FAST_RETRIES,
    )
    bodies = requests("slow", knob("FAULTS_SLOW_SES_REQUESTS", 16), several_every=4, several=2)
    expected = expected_keys(bodies)
    try:
        proxy.reset_records()
        proxy.add(
            latency(7, service="ses", operations=SES_SEND_OPERATIONS),
            visibility_failures(0.3),
            hung(0.3 / 0.7, service="sqs", operations=VISIBILITY_OPERATIONS),  # 30 % of all
        )
        stack.enqueue(bodies)
        args = stack.consumer_args(concurrency=4, wait_time=1)
        consumers = [stack.start_consumer(f"slow{i}", args) for i in range(2)]
        drained = wait_until(lambda: stack.depth() == 0, timeout=150, interval=1)
        for consumer in consumers:
            consumer.terminate(timeout=30)
    finally:
        stack.close()
        proxy.clear()
    faults = Counter(c.fault for c in proxy.records() if c.fault)
    figures = report("slow SES", expected, proxy, stack, faults=dict(faults))
    assert drained
    assert figures["sent once"] == len(expected), sends_per_recipient(proxy)
    assert figures["rows SENT"] == len(expected)
    assert figures["dead-lettered"] == 0


def test_poison_state_never_stalls_the_consumer(moto_server, proxy):
    stack = Stack(
        moto_server,
        endpoint=proxy.url,
        queue="poison-queue",
        journal_table="poison-journal",
        bucket="poison-templates",
        extra_env=FAST_RETRIES,
    )
    poison = ['{"attempts": Infinity}', '{"attempts": 1e999}', "[" * 50_000, "garbage {"]
    bodies = requests("poison", knob("FAULTS_POISON_REQUESTS", 30))
    expected = expected_keys(bodies)
    queue_url = stack.direct(stack.queue_url)
    for i, body in enumerate(bodies):
        extra = {}
        if i % 2:  # every other record carries a state no parser should trust
            text = poison[(i // 2) % len(poison)]
            extra["MessageAttributes"] = {
                "EmailOpsState": {"DataType": "String", "StringValue": text}
            }
        stack.sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(body), **extra)
    try:
        proxy.reset_records()
        stack.consume(env={"CONSUMER_CONCURRENCY": "3"})  # fails unless it exits 0
    finally:
        stack.close()
    figures = report("poison state", expected, proxy, stack)
    assert figures["sent once"] == len(expected)
    assert figures["left on the queue"] == 0 and figures["dead-lettered"] == 0


def test_a_stop_during_a_large_request_stops_and_another_consumer_finishes(moto_server, proxy):
    """200 recipients, 2 s per send, SIGTERM: out within --stop-timeout + 5 s; a second
    consumer sends the rest; exactly one send per recipient; no reader ever sees a row holding
    only its Id (moto used to show a claim's row half-written: tests/support/moto_atomic.py)."""
    stop_timeout = 10
    stack = Stack(
        moto_server,
        endpoint=proxy.url,
        queue="stop-queue",
        journal_table="stop-journal",
        bucket="stop-templates",
        extra_env=FAST_RETRIES,
    )
    count = knob("FAULTS_STOP_RECIPIENTS", 200)
    body = {
        "messageId": "added-to-team",
        "recipients": [{"email": f"stop{i}@example.com"} for i in range(count)],
        "context": {"teamName": "Team", "administrator": "Ada"},
    }
    expected = expected_keys([body])
    try:
        with rows_without_status(stack) as half_written:
            proxy.reset_records()
            proxy.add(latency(2, service="ses", operations=SES_SEND_OPERATIONS))
            stack.enqueue([body])
            first = stack.start_consumer(
                "stop1", stack.consumer_args(concurrency=4, wait_time=1, stop_timeout=stop_timeout)
            )
            assert wait_until(lambda: len(proxy.ses_sends()) >= 4, timeout=60)
            signalled = time.monotonic()
            code = first.terminate(timeout=stop_timeout + 30)
            took = time.monotonic() - signalled
            sends_at_exit = len(proxy.ses_sends())
            time.sleep(3)  # nothing of the first consumer may still be sending
            after_exit = len(proxy.ses_sends()) - sends_at_exit
            # Many sends at once (a recipient thread per slot): the rest at 2 s each, in ~10 s.
            second = stack.start_consumer(
                "stop2", stack.consumer_args(concurrency=40, wait_time=1, until_empty=True)
            )
            second.wait(timeout=150)
    finally:
        stack.close()
        proxy.clear()
    figures = report(
        "stop",
        expected,
        proxy,
        stack,
        **{"exit after SIGTERM s": round(took, 1), "first consumer sent": sends_at_exit},
    )
    assert code == 0 and took <= stop_timeout + 5
    assert after_exit == 0, "sends went out after the first consumer had exited"
    assert figures["sent once"] == count and figures["rows SENT"] == count
    assert not half_written, f"rows read holding only their Id: {sorted(half_written)}"
