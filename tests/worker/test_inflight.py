"""Leases that outlive slow work, bounded capacity, and deletes batched across records."""

from __future__ import annotations

import json
import threading
import time

from emailops.core.pipeline import HeldClaims
from emailops.core.ports import Claim, ClaimState
from tests.fakes import InMemoryJournal
from tests.worker.conftest import make_consumer, request
from worker.inflight import Capacity, DeleteBatcher, InFlight, LeaseKeeper


def claim(journal: InMemoryJournal, key: str, now: int, lease: int = 30) -> int:
    result = journal.claim(
        Claim(key, "welcome", "a@example.com", {}, now=now, lease_seconds=lease, ttl_seconds=60)
    )
    assert result.state is ClaimState.CLAIMED
    return result.attempt


class Visibility:
    def __init__(self) -> None:
        self.changes: list[int] = []

    def extend_visibility(self, messages, seconds: int) -> list[str]:
        self.changes += [seconds] * len(messages)
        return []


def test_the_keeper_extends_visibility_and_claims_at_a_third_of_the_lease():
    journal = InMemoryJournal()
    inflight = InFlight()
    queue = Visibility()
    attempt = claim(journal, "k1", now=1000)
    held = inflight.add(type("M", (), {"receipt_handle": "r1", "message_id": "m1"})())
    held.claims.hold("k1", attempt, 1030)
    wall = [1009.0]
    keeper = LeaseKeeper(
        inflight=inflight,
        queue=queue,
        journal=journal,
        visibility_seconds=30,
        lease_seconds=30,
        clock=lambda: wall[0],
    )
    assert keeper.extend_due(now=held.extended_at + 9) == 0  # not yet a third
    wall[0] = 1010.0
    assert keeper.extend_due(now=held.extended_at + 10) == 2  # one visibility call, one claim
    assert queue.changes == [30]
    assert journal.rows["k1"]["ClaimExpiresAt"] == 1010 + 30
    # A claim someone else took over is not extended (fenced by Attempts), and is marked lost.
    journal.rows["k1"]["Attempts"] += 1
    wall[0] = 1020.0
    keeper.extend_due(now=held.extended_at + 10)
    assert journal.rows["k1"]["ClaimExpiresAt"] == 1040
    assert held.claims.snapshot() == {} and held.claims.get("k1").lost
    keeper.close()


def test_a_slow_send_keeps_its_claim_so_no_second_consumer_can_take_it(aws, parts):
    pipeline, sender, queue = parts
    journal = pipeline.journal
    extended, release = threading.Event(), threading.Event()
    real_send = sender.send

    def slow_send(email, *, before_send=None):
        before_send()  # the send starts: its slot taken, its claim checked
        key = next(iter(journal.rows))
        first_lease = journal.rows[key]["ClaimExpiresAt"]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (
            journal.rows[key]["ClaimExpiresAt"] == first_lease or not queue.extended
        ):
            release.wait(0.05)
        extended.set()
        # Past the original lease, a second consumer's claim is still refused.
        later = Claim(
            key,
            "welcome",
            "a@example.com",
            {},
            now=first_lease + 1,
            lease_seconds=2,
            ttl_seconds=60,
        )
        assert journal.claim(later).state is ClaimState.IN_PROGRESS
        return real_send(email)

    sender.send = slow_send
    pipeline.settings = type(pipeline.settings)(
        from_address=pipeline.settings.from_address, lease_seconds=2
    )
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=request("a@example.com"))
    consumer = make_consumer(
        queue, pipeline, aws.dlq_url, visibility_seconds=2, lease_seconds=2, concurrency=1
    )
    stats = consumer.run(stop=threading.Event(), until_empty=True, wait_time=0)
    assert extended.is_set() and stats.deleted == 1 and len(sender.sent) == 1
    assert queue.extended  # the record's visibility was extended too


def test_capacity_bounds_what_is_held():
    capacity = Capacity(3)
    assert capacity.take(10, timeout=0) == 3
    assert capacity.take(1, timeout=0.01) == 0
    capacity.give(2)
    assert capacity.take(10, timeout=0) == 2


def test_capacity_waits_for_a_full_batch_while_the_workers_have_work():
    capacity = Capacity(11)
    assert capacity.take(10, timeout=0) == 10
    capacity.give(2)
    assert capacity.take(10, timeout=0, starving=lambda: False) == 0  # workers busy: wait
    assert capacity.take(10, timeout=0, starving=lambda: True) == 3  # idle workers: take them


def test_deletes_are_batched_across_records_and_flushed_promptly(aws):
    from emailops.aws.sqs import SqsQueue

    queue = SqsQueue(aws.sqs, aws.queue_url)
    for i in range(12):
        aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=json.dumps({"n": i}))
    messages = queue.receive(max_messages=10, wait_seconds=0)
    messages += queue.receive(max_messages=10, wait_seconds=0)
    deleted: list[int] = []
    batcher = DeleteBatcher(queue, on_deleted=deleted.append, max_delay=0.05)
    for message in messages:
        batcher.add(message)
    deadline = time.monotonic() + 5
    while sum(deleted) < 12 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert deleted == [10, 2]  # a full batch at once, the rest within max_delay
    batcher.close()


def test_held_claims_snapshot_is_a_copy():
    held = HeldClaims()
    held.hold("a", 1)
    snap = held.snapshot()
    held.release("a")
    assert snap == {"a": 1} and held.snapshot() == {}
