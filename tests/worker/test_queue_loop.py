"""The one queue worker: both consumers are a ``QueueWorker`` with their own handler and
disposition passed in, and a third, tiny one run through it on a fake queue gets the same
supervision: units of its size, the message budget, stop and hand-back, hung detection, and a
crash that touches only its own unit."""

from __future__ import annotations

import threading

import pytest

from emailops.aws.sqs import QueueMessage
from tests.support.stack import wait_until
from tests.worker.conftest import make_consumer
from tests.worker.test_events_consumer import BatchRecorder
from worker.email_disposition import EmailDisposition
from worker.events_consumer import EventsConsumer
from worker.events_disposition import EventsDisposition
from worker.queue_loop import QueueWorker, WorkerSettings
from worker.queue_worker import ExitCode, Supervisor, exit_status
from worker.stats import Counters, Health


class FakeQueue:
    """Visible messages in a list; a release puts them back at the end."""

    def __init__(self, count: int) -> None:
        self.visible = [
            QueueMessage(message_id=f"m{i}", receipt_handle=f"r{i}", body=f"b{i}")
            for i in range(count)
        ]
        self.released: list[str] = []
        self.receives = 0
        self.asked: list[int] = []  # max_messages of each receive
        self._lock = threading.Lock()

    def receive(self, *, max_messages: int = 10, wait_seconds: int = 20) -> list[QueueMessage]:
        with self._lock:
            self.receives += 1
            self.asked.append(max_messages)
            got, self.visible = self.visible[:max_messages], self.visible[max_messages:]
        return got

    def add(self, count: int) -> None:
        with self._lock:
            start = len(self.visible) + self.receives * 100
            self.visible += [
                QueueMessage(message_id=f"n{i}", receipt_handle=f"n{i}", body=f"n{i}")
                for i in range(start, start + count)
            ]

    def release(self, messages: list[QueueMessage]) -> list[str]:
        with self._lock:
            self.released += [m.body for m in messages]
            self.visible += messages
        return []


class Upper:
    """The tiny handler: a body's outcome is the body in capitals; ``block`` holds a unit."""

    def __init__(self, *, block: bool = False) -> None:
        self.units: list[list[str]] = []
        self.entered, self.release = threading.Event(), threading.Event()
        self.block = block

    def __call__(self, unit):
        self.units.append([h.message.body for h in unit])
        if self.block and len(self.units) == 1:
            self.entered.set()
            assert self.release.wait(30)
        return [h.message.body.upper() for h in unit]


class Keep:
    """The tiny disposition: notes what it settled; ``fail_on`` raises while settling it."""

    def __init__(self, fail_on: str = "") -> None:
        self.settled: list[tuple[str, str]] = []
        self.crashed_bodies: list[str] = []
        self.fail_on = fail_on

    def on_received(self, messages):
        return []

    def settle(self, messages, outcomes):
        if any(m.body == self.fail_on for m in messages):
            raise RuntimeError("a bug in the disposition")
        self.settled += [(m.body, o) for m, o in zip(messages, outcomes, strict=True)]

    def crashed(self, messages):
        self.crashed_bodies += [m.body for m in messages]


def tiny_worker(queue, handler, disposition, **settings) -> QueueWorker:
    return QueueWorker(
        queue=queue,
        handler=handler,
        disposition=disposition,
        settings=WorkerSettings(thread_prefix="tiny-", **settings),
        supervisor=Supervisor(health=Health(), check_every=0.1),
        stats=Counters(),
    )


def test_both_consumers_are_the_queue_worker_with_their_handler_and_disposition(aws, parts):
    pipeline, _sender, queue = parts
    email = make_consumer(queue, pipeline, aws.dlq_url, concurrency=3)
    events = EventsConsumer(queue=queue, handler=BatchRecorder(), dead_letter_url=None)
    assert type(email.worker) is type(events.worker) is QueueWorker
    assert email.worker.handler == email.process
    assert isinstance(email.worker.disposition, EmailDisposition)
    assert events.worker.handler == events.handle_batch
    assert isinstance(events.worker.disposition, EventsDisposition)
    # One record a call for email; a gathered batch a call for events.
    assert (email.worker.settings.per_call, email.worker.settings.workers) == (1, 3)
    assert events.worker.settings.per_call == events.batch_size == 10
    assert email.worker.supervisor is email.supervisor
    assert events.worker.supervisor is events.supervisor


def test_a_tiny_handler_gets_units_of_its_size_within_the_budget():
    queue, handler, keep = FakeQueue(8), Upper(), Keep()
    worker = tiny_worker(queue, handler, keep, per_call=3, gather=6, prefetch=0, workers=2)
    worker.run(stop=threading.Event(), max_messages=7, wait_time=0)
    assert sorted(keep.settled) == sorted((f"b{i}", f"B{i}") for i in range(7))
    assert max(len(unit) for unit in handler.units) <= 3
    assert worker.stats.received == 7 and [m.body for m in queue.visible] == ["b7"]
    assert worker.finished and not worker.failure


def test_until_empty_drains_the_queue_and_ends():
    queue, keep = FakeQueue(5), Keep()
    tiny_worker(queue, Upper(), keep, workers=2, receivers=2).run(
        stop=threading.Event(), until_empty=True, wait_time=0
    )
    assert len(keep.settled) == 5 and queue.visible == []


def test_a_stop_lets_the_started_unit_finish_and_hands_back_the_rest():
    queue, handler, keep = FakeQueue(5), Upper(block=True), Keep()
    worker = tiny_worker(queue, handler, keep, prefetch=4)  # one worker, five held
    stop = threading.Event()
    runner = threading.Thread(target=worker.run, kwargs={"stop": stop, "wait_time": 0})
    runner.start()
    assert handler.entered.wait(10)
    assert wait_until(lambda: len(worker.inflight) == 5, timeout=10)
    stop.set()
    handler.release.set()
    runner.join(10)
    assert not runner.is_alive()
    assert keep.settled == [("b0", "B0")]  # the started one finished
    assert sorted(queue.released) == ["b1", "b2", "b3", "b4"]  # visible again at once
    assert len(worker.inflight) == 0 and exit_status(worker.failure, worker.health)[0] == 0


@pytest.mark.parametrize(
    "ends", [{"until_empty": True}, {"max_messages": 1}], ids=["receiving", "drained"]
)
def test_a_hung_tiny_handler_is_reported_and_what_it_holds_handed_back(ends):
    """Also once the budget has drained the receivers: the hang still ends the run."""
    queue, handler = FakeQueue(1), Upper(block=True)
    worker = tiny_worker(queue, handler, Keep(), hung_seconds=0.3, stop_timeout=0.2)
    runner = threading.Thread(
        target=worker.run, kwargs={"stop": threading.Event(), "wait_time": 0, **ends}, daemon=True
    )
    try:
        runner.start()
        runner.join(10)
        assert not runner.is_alive(), "the run never ended"
        assert handler.entered.is_set()
        assert worker.failure == "tiny-worker-0" and "hung" in worker.health.fault
        assert queue.released == ["b0"]  # started, but its thread failed: handed back
        assert exit_status(worker.failure, worker.health)[0] is ExitCode.THREAD_FAILED
    finally:
        handler.release.set()


def test_a_unit_that_crashes_its_disposition_touches_no_other():
    queue, keep = FakeQueue(3), Keep(fail_on="b1")
    worker = tiny_worker(queue, Upper(), keep)
    worker.run(stop=threading.Event(), until_empty=True, wait_time=0)
    assert keep.crashed_bodies == ["b1"]
    assert sorted(keep.settled) == [("b0", "B0"), ("b2", "B2")]
    assert not worker.failure and worker.health.healthy


def test_a_busy_worker_is_not_fed_a_part_batch_while_it_works():
    """Each receive is a billed call: while the only worker is busy, the slots its unit left free
    do not become a receive of fewer; it receives a whole batch once the worker is free."""
    queue, handler, keep = FakeQueue(3), Upper(block=True), Keep()
    worker = tiny_worker(queue, handler, keep, per_call=10, gather=10, prefetch=0)
    stop = threading.Event()
    runner = threading.Thread(target=worker.run, kwargs={"stop": stop, "wait_time": 0})
    runner.start()
    try:
        assert handler.entered.wait(10)  # a unit of 3: 7 slots free
        queue.add(10)
        assert not wait_until(lambda: queue.receives > 1, timeout=1.5)
    finally:
        handler.release.set()
    assert wait_until(lambda: len(keep.settled) == 13, timeout=10)
    stop.set()
    runner.join(10)
    assert set(queue.asked) == {10}, queue.asked
    assert [len(unit) for unit in handler.units[:2]] == [3, 10]
