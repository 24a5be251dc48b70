"""Chaos: several consumers, one SIGKILLed every 1-3 s, AWS faults on. Nothing may be lost, and
every duplicate send must be explained by a lost SES reply or a kill between a send and its mark.

Sizes and duration: see conftest.py (``make chaos`` runs it long).
"""

from __future__ import annotations

import random
import time
from dataclasses import replace

import pytest

from tests.faults.conftest import knob
from tests.faults.ledger import Ledger
from tests.faults.workload import FAST_RETRIES, VISIBILITY_SECONDS, expected_keys, requests
from tests.support.aws_proxy import (
    dynamodb_throttling,
    lost_ses_replies,
    ses_5xx,
    ses_throttling,
    sqs_5xx,
)
from tests.support.stack import Stack, wait_until

pytestmark = pytest.mark.faults


def steady_faults():
    """Background faults for the whole run; botocore's own retries absorb most of them."""
    return (
        ses_throttling(0.08),
        ses_5xx(0.05),
        lost_ses_replies(0.02),
        lost_ses_replies(0.01, as_500=True),
        dynamodb_throttling(0.05),
        sqs_5xx(0.03),
    )


def burst(rng: random.Random):
    """A short outage of one kind: long enough to beat botocore's retries, so the consumer's own
    retry path runs too."""
    kind = rng.choice(
        [
            ses_throttling(),
            ses_5xx(),
            dynamodb_throttling(operations=["UpdateItem"]),
            sqs_5xx(operations=["DeleteMessageBatch", "ReceiveMessage"]),
        ]
    )
    return replace(kind, name=kind.name + " (burst)").during(rng.uniform(1.0, 3.0))


def test_chaos(moto_server, proxy, seed):
    count = knob("FAULTS_REQUESTS", 300)
    consumers = knob("FAULTS_CONSUMERS", 4)
    concurrency = knob("FAULTS_CONCURRENCY", 8)
    chaos_seconds = knob("FAULTS_CHAOS_SECONDS", 30)
    drain_seconds = knob("FAULTS_DRAIN_SECONDS", 90)
    rng = random.Random(seed)
    stack = Stack(
        moto_server,
        endpoint=proxy.url,
        queue="chaos-queue",
        journal_table="chaos-journal",
        bucket="chaos-templates",
        visibility_timeout=VISIBILITY_SECONDS,
        # A consumer killed every 1-3 s burns a receive of every record it holds; at 3, SQS's own
        # redrive (no reason) still wins now and then under this rate of kills (the outage test
        # keeps 3: there retries, not crashes, are what must not reach the DLQ).
        max_receive_count=knob("FAULTS_MAX_RECEIVE_COUNT", 5),
        extra_env=FAST_RETRIES,
    )
    bodies = requests("chaos", count)
    expected = expected_keys(bodies)
    args = stack.consumer_args(concurrency=concurrency, wait_time=1)
    kills: dict[str, float] = {}
    incarnations = [0] * consumers
    crashed: list[str] = []

    def start(slot: int):
        incarnations[slot] += 1
        return stack.start_consumer(f"c{slot}-{incarnations[slot]}", args)

    try:
        proxy.reset_records()  # bootstrap's calls are not part of the run
        stack.enqueue(bodies)
        proxy.add(*steady_faults())
        running = [start(slot) for slot in range(consumers)]
        started = time.monotonic()
        next_kill = started + rng.uniform(1, 3)
        next_burst = started + rng.uniform(2, 6)
        while time.monotonic() - started < chaos_seconds:
            now = time.monotonic()
            for slot, process in enumerate(running):
                if not process.alive():  # exited by itself: note it, keep the slot filled
                    crashed.append(f"{process.name} exit {process.process.returncode}")
                    running[slot] = start(slot)
            if now >= next_kill:
                slot = rng.randrange(consumers)
                kills[running[slot].name] = running[slot].kill()
                running[slot] = start(slot)
                next_kill = now + rng.uniform(1, 3)
            if now >= next_burst:
                proxy.add(burst(rng))
                next_burst = now + rng.uniform(4, 10)
            if stack.depth() == 0:
                break  # drained before the chaos time was up
            time.sleep(0.2)
        chaos_took = time.monotonic() - started

        def drained() -> bool:
            return stack.depth() == 0

        drained_in_time = wait_until(drained, timeout=drain_seconds, interval=0.5)
        took = time.monotonic() - started
        for process in running:  # stopped as an orchestrator stops them: their counts flushed
            process.terminate(timeout=30)
    finally:
        stack.close()
        proxy.clear()

    ledger = Ledger(expected, proxy.ses_sends(), proxy.records(), kills)
    dead_letters = stack.depth(stack.dlq_url)
    statuses = stack.journal_statuses()
    not_sent = sorted(a for a, key in expected.items() if statuses.get(key) != "SENT")
    rows_sent = sum(1 for key in expected.values() if statuses.get(key) == "SENT")
    counted = stack.counted()
    print(
        f"\n--- chaos: {count} requests, {consumers} consumers x concurrency {concurrency} "
        f"({'--concurrency passed' if '--concurrency' in args else 'no --concurrency flag'}), "
        f"kills for {chaos_took:.0f} s, drained={drained_in_time} after {took:.0f} s, seed {seed}\n"
        f"{ledger.report()}\n"
        f"dead-lettered         {dead_letters}\n"
        + (f"{stack.describe_dead_letters()}\n" if dead_letters else "")
        + f"journal rows not SENT {len(not_sent)}"
        + (
            f" (e.g. {not_sent[0]}: {statuses.get(expected[not_sent[0]], 'no row')})"
            if not_sent
            else ""
        )
        + f"\nstats counted sent    {counted} of {rows_sent} SENT rows "
        f"(error {(counted - rows_sent) / max(1, rows_sent):+.2%})"
        + f"\nconsumers that exited on their own: {crashed or 'none'}\n"
        f"faults injected: {dict(_fault_counts(proxy))}"
    )
    assert drained_in_time, f"queue not drained within {drain_seconds} s after the chaos"
    assert ledger.lost == [], f"{len(ledger.lost)} recipients never got their email"
    assert dead_letters == 0, "valid requests were dead-lettered"
    assert ledger.unexpected == 0
    assert not_sent == [], "delivered, but the journal does not say SENT"
    assert ledger.duplicates <= ledger.allowance, ledger.causes
    # Counted only when the conditional write that made a row SENT succeeded: never more than
    # the rows. Short where a SIGKILL took counts still in memory: a write throttled by a
    # DynamoDB burst keeps its counts for the next flush, which a killed consumer never makes
    # (the outage run, with graceful stops only, must agree exactly).
    assert rows_sent * 0.8 <= counted <= rows_sent, (counted, rows_sent)


def _fault_counts(proxy):
    counts: dict[str, int] = {}
    for call in proxy.records():
        if call.fault:
            counts[call.fault] = counts.get(call.fault, 0) + 1
    return sorted(counts.items())
