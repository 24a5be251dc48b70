"""The queue worker's shared parts: watched threads and their heartbeats, the message budget and
the exit codes both consumers' commands use."""

from __future__ import annotations

import threading

from emailops.core.retry import RetryPolicy, RetryState
from worker.queue_worker import ExitCode, MessageBudget, Supervisor, exit_status
from worker.stats import Health


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_thread_that_stops_beating_is_reported_hung_and_stops_the_run():
    clock, stop, release = Clock(), threading.Event(), threading.Event()
    supervisor = Supervisor(health=Health(), clock=clock, check_every=3600)  # checked by hand
    supervisor.start(stop)
    supervisor.watch(release.wait, name="stuck", hung_after=10)
    try:
        clock.now += 5
        assert supervisor.check() == [] and not stop.is_set()
        clock.now += 6
        assert supervisor.check() == ["stuck"]
        assert supervisor.check() == []  # reported once
        assert stop.is_set() and supervisor.failure == "stuck"
        assert not supervisor.health.healthy and supervisor.health.fault == "thread stuck hung"
        assert exit_status(supervisor.failure, supervisor.health)[0] is ExitCode.THREAD_FAILED
    finally:
        release.set()
        supervisor.close()


def test_a_thread_that_beats_is_not_hung():
    clock, stop, done = Clock(), threading.Event(), threading.Event()
    supervisor = Supervisor(health=Health(), clock=clock, check_every=3600)
    supervisor.start(stop)
    beat, beaten = threading.Event(), threading.Event()

    def beating() -> None:
        while not done.is_set():
            if beat.wait(0.05):
                beat.clear()
                supervisor.beat()
                beaten.set()

    supervisor.watch(beating, name="beating", hung_after=10)
    try:
        for _ in range(3):
            clock.now += 8
            beat.set()
            assert beaten.wait(5)
            beaten.clear()
            assert supervisor.check() == []
        assert not stop.is_set() and supervisor.failure == ""
    finally:
        done.set()
        supervisor.close()


def test_a_thread_that_raises_is_reported_dead():
    stop = threading.Event()
    supervisor = Supervisor(health=Health())
    supervisor.start(stop)

    def crash() -> None:
        raise RuntimeError("a bug")

    supervisor.watch(crash, name="crasher").join(5)
    supervisor.close()
    assert stop.is_set() and supervisor.failure == "crasher"
    code, said = exit_status(supervisor.failure, supervisor.health)
    assert code == 4 and "thread crasher died" in said


def test_exit_codes_keep_their_meanings():
    health = Health()
    assert exit_status("", health) == (ExitCode.OK, "")
    health.fault_seen("set EMAIL_SENDER", "sender not verified")
    assert exit_status("", health) == (3, "unhealthy: set EMAIL_SENDER")


def test_the_message_budget_is_shared_and_given_back():
    budget = MessageBudget(5)
    assert budget.reserve(10) == 5 and budget.spent
    budget.give_back(2)  # asked for 5, 3 came
    assert budget.reserve(10) == 2 and budget.reserve(1) == 0
    assert MessageBudget(None).reserve(10) == 10 and not MessageBudget(None).spent


def test_the_retry_policy_backs_off_within_its_cap_and_spends_its_budget():
    policy = RetryPolicy(backoff_base=4, backoff_cap=6, max_seconds=100)
    assert policy.delay(1, rng=lambda low, high: high) == 4
    assert policy.delay(5, rng=lambda low, high: high) == 6
    state, exhausted = policy.after_crash(RetryState(), now=1000, reason="boom")
    assert (state.attempts, state.first_attempt_at, exhausted) == (1, 1000, False)
    assert policy.after_crash(state, now=1100, reason="boom")[1]
