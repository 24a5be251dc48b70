"""The pacer behind redrive and bulk resend rates: spaced slots, no catch-up burst."""

from __future__ import annotations

from emailops.core.pacing import Pacer


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_slots_are_one_interval_apart():
    clock = FakeClock()
    pacer = Pacer(4, clock=clock, sleep=clock.sleep)
    for _ in range(5):
        pacer.wait()
    assert clock.slept == [0.25, 0.25, 0.25, 0.25]


def test_a_slow_step_does_not_earn_a_burst():
    clock = FakeClock()
    pacer = Pacer(2, clock=clock, sleep=clock.sleep)
    pacer.wait()
    clock.now += 10  # a slow send
    assert pacer.wait() == 0
    assert pacer.wait() == 0.5  # the next one is still a full interval later


def test_rate_zero_means_no_pacing():
    clock = FakeClock()
    pacer = Pacer(0, clock=clock, sleep=clock.sleep)
    assert [pacer.wait() for _ in range(3)] == [0, 0, 0] and clock.slept == []
