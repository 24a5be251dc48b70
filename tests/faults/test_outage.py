"""An SES outage longer than the queue's patience: 5xx on every SES call for 30 s, on a queue whose
RedrivePolicy dead-letters after 3 receives (of an 8 s visibility timeout). Transient trouble must not use up those receives:
afterwards everything is delivered and the dead-letter queue is empty."""

from __future__ import annotations

import json
import time

import pytest

from tests.faults.conftest import knob
from tests.faults.ledger import Ledger
from tests.faults.workload import FAST_RETRIES, VISIBILITY_SECONDS, expected_keys, requests
from tests.support.aws_proxy import ses_5xx
from tests.support.stack import Stack

pytestmark = pytest.mark.faults


MAX_RECEIVE_COUNT = 3


def test_ses_outage_leaves_nothing_dead_lettered(moto_server, proxy):
    # Longer than the queue's patience: had the retries used up receives, 3 of them would have
    # dead-lettered every record within 3 visibility timeouts (24 s), whatever the back-off.
    outage_seconds = knob("FAULTS_OUTAGE_SECONDS", MAX_RECEIVE_COUNT * VISIBILITY_SECONDS + 6)
    assert outage_seconds > MAX_RECEIVE_COUNT * VISIBILITY_SECONDS
    stack = Stack(
        moto_server,
        endpoint=proxy.url,
        queue="outage-queue",
        journal_table="outage-journal",
        bucket="outage-templates",
        visibility_timeout=VISIBILITY_SECONDS,
        extra_env=FAST_RETRIES,
    )
    policy = stack.sqs.get_queue_attributes(
        QueueUrl=stack.direct(stack.queue_url), AttributeNames=["RedrivePolicy"]
    )["Attributes"]["RedrivePolicy"]
    assert int(json.loads(policy)["maxReceiveCount"]) == MAX_RECEIVE_COUNT
    bodies = requests("outage", 40, several_every=4, several=2)
    expected = expected_keys(bodies)
    args = stack.consumer_args(concurrency=4, wait_time=1)
    dead_lettered_at = None
    try:
        proxy.reset_records()
        proxy.add(ses_5xx(operations=None).during(outage_seconds))
        outage_ends = time.monotonic() + outage_seconds
        stack.enqueue(bodies)
        for slot in range(2):
            stack.start_consumer(f"outage{slot}", args)
        deadline = outage_ends + 60
        while time.monotonic() < deadline:
            if stack.depth(stack.dlq_url):  # no need to sit out the outage to know
                dead_lettered_at = outage_seconds - (outage_ends - time.monotonic())
                break
            if time.monotonic() > outage_ends and stack.depth() == 0:
                break
            time.sleep(0.5)
        left_on_queue = stack.depth()
        for process in stack.consumers:  # stopped gracefully: they flush what they counted
            process.terminate(timeout=30)
    finally:
        stack.close()
        proxy.clear()
    ledger = Ledger(expected, proxy.ses_sends(), proxy.records(), kills={})
    dead_letters = stack.depth(stack.dlq_url)
    statuses = stack.journal_statuses()
    rows_sent = sum(1 for key in expected.values() if statuses.get(key) == "SENT")
    counted = stack.counted()
    refused = sum(1 for c in proxy.records() if c.fault)
    print(
        f"\n--- SES outage of {outage_seconds} s, maxReceiveCount 3: {refused} SES calls refused\n"
        f"{ledger.report()}\n"
        f"dead-lettered         {dead_letters}"
        + (f" (first after {dead_lettered_at:.0f} s of outage)" if dead_lettered_at else "")
        + (f"\n{stack.describe_dead_letters()}" if dead_letters else "")
        + f"\nleft on the queue     {left_on_queue}"
        + f"\nstats counted sent    {counted} of {rows_sent} SENT rows"
    )
    assert dead_letters == 0, "transient SES trouble dead-lettered records"
    assert left_on_queue == 0, "the queue did not drain within 60 s after the outage"
    assert ledger.lost == []
    assert ledger.duplicates <= ledger.allowance, ledger.causes
    assert counted == rows_sent == len(expected)  # no kills: the counters agree exactly
