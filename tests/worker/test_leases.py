"""The lease keeper under failing and hung calls, and when a record's first extension is due."""

from __future__ import annotations

import threading
import time

from emailops import container
from emailops.core.errors import TransientError
from tests.fakes import InMemoryJournal
from tests.worker.conftest import make_consumer, request
from tests.worker.test_inflight import claim
from worker.inflight import InFlight, LeaseKeeper

DOWN = TransientError("extend", reason="ServiceUnavailable")


class Message:
    def __init__(self, n: int) -> None:
        self.receipt_handle, self.message_id = f"r{n}", f"m{n}"


class FlakyVisibility:
    """ChangeMessageVisibilityBatch that fails (or refuses ids) as told, and records the rest."""

    def __init__(self) -> None:
        self.fail: list[Exception] = []
        self.refuse: set[str] = set()
        self.calls: list[list[str]] = []

    def extend_visibility(self, messages, seconds: int) -> list[str]:
        self.calls.append([m.message_id for m in messages])
        if self.fail:
            raise self.fail.pop(0)
        refused = [m.message_id for m in messages if m.message_id in self.refuse]
        self.refuse.clear()
        return refused


def keeper_for(journal, queue, inflight, wall) -> LeaseKeeper:
    return LeaseKeeper(
        inflight=inflight,
        queue=queue,
        journal=journal,
        visibility_seconds=30,
        lease_seconds=30,
        clock=lambda: wall[0],
    )


def test_a_failed_extension_is_tried_again_at_the_next_tick_not_half_a_lease_later():
    journal, queue, inflight, wall = InMemoryJournal(), FlakyVisibility(), InFlight(), [1010.0]
    held = inflight.add(Message(1), received_at=0.0)
    refused = inflight.add(Message(2), received_at=0.0)
    held.claims.hold("k1", claim(journal, "k1", now=1000), 1030)
    keeper = keeper_for(journal, queue, inflight, wall)
    queue.fail.append(DOWN)
    queue.refuse.add("m2")
    journal.fail_next["extend_claim"] = DOWN
    keeper.extend_due(now=10.0)  # the visibility call and the claim both fail
    assert held.extended_at == 0.0 and journal.rows["k1"]["ClaimExpiresAt"] == 1030
    wall[0] += keeper.tick
    keeper.extend_due(now=10.0 + keeper.tick)  # the very next tick
    assert len(queue.calls) == 2 and held.extended_at == 10.0 + keeper.tick
    assert refused.extended_at == 0.0  # refused by SQS in the first call: still due
    assert journal.rows["k1"]["ClaimExpiresAt"] == int(wall[0]) + 30
    keeper.extend_due(now=10.0 + 2 * keeper.tick)
    assert queue.calls[-1] == ["m2"] and refused.extended_at == 10.0 + 2 * keeper.tick
    keeper.close()


def test_one_hung_call_does_not_starve_the_other_leases():
    journal, queue, inflight, wall = InMemoryJournal(), FlakyVisibility(), InFlight(), [1010.0]
    hung, release = threading.Event(), threading.Event()
    extend = journal.extend_claim

    def extend_claim(key, **kwargs):
        if key == "hung":
            hung.set()
            release.wait(30)
        return extend(key, **kwargs)

    journal.extend_claim = extend_claim
    first = inflight.add(Message(1), received_at=0.0)
    second = inflight.add(Message(2), received_at=0.0)
    first.claims.hold("hung", claim(journal, "hung", now=1000), 1030)
    second.claims.hold("fine", claim(journal, "fine", now=1000), 1030)
    keeper = keeper_for(journal, queue, inflight, wall)
    done = threading.Event()
    runner = threading.Thread(target=lambda: (keeper.extend_due(now=10.0), done.set()))
    runner.start()
    try:
        assert done.wait(keeper.pass_seconds + 5), "the pass waited for the hung call"
        assert hung.is_set()
        assert journal.rows["fine"]["ClaimExpiresAt"] == 1040  # extended beside the hung one
        assert first.extended_at == second.extended_at == 10.0  # visibility too
    finally:
        release.set()
        runner.join(5)
        keeper.close()


def test_the_keeper_and_visibility_changes_use_clients_with_short_timeouts(aws):
    consumer = __import__("worker.wiring", fromlist=["build_consumer"]).build_consumer(
        adapters=container.current(), concurrency=2
    )
    for client in (consumer.lease_queue.client, consumer.keeper.journal.client):
        assert client.meta.config.read_timeout <= 2
        assert client.meta.config.retries["total_max_attempts"] <= 2
    assert consumer.lease_queue.client is not consumer.queue.client
    assert consumer.keeper.third == 10 and consumer.keeper.tick <= 2.5


def test_the_first_extension_is_timed_from_the_receive_not_after_a_slow_refresh(aws, parts):
    pipeline, _sender, queue = parts
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=request("a@example.com"))
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=request("b@example.com"))
    worn, *_ = queue.receive(max_messages=1, wait_seconds=0)
    queue.change_visibility(worn, 0)  # it comes back with receive count 2: to be refreshed
    consumer = make_consumer(queue, pipeline, aws.dlq_url, max_receive_count=3, concurrency=1)
    received: list[float] = []
    refreshed: list[float] = []
    held: list = []
    real_receive, real_refresh, real_add = (
        queue.receive,
        consumer.disposition.refresh,
        consumer.inflight.add,
    )

    def receive(**kwargs):
        batch = real_receive(**kwargs)
        received.append(time.monotonic())
        return batch

    def slow_refresh(messages):
        time.sleep(0.3)  # a slow SendMessageBatch, measured below (not raced against)
        real_refresh(messages)
        refreshed.append(time.monotonic())

    def add(message, **kwargs):
        held.append(real_add(message, **kwargs))
        return held[-1]

    queue.receive, consumer.disposition.refresh, consumer.inflight.add = receive, slow_refresh, add
    consumer.run(stop=threading.Event(), max_messages=2, wait_time=0)
    assert refreshed and held, "the batch had one worn record and one to work on"
    assert received[0] <= held[0].extended_at < refreshed[0] - 0.25
