"""SharedRateLimiter over the local bucket store, with a fake clock and sleep: pacing, AIMD, the
daily-quota pause, and falling back from (and back to) the shared store."""

from __future__ import annotations

import itertools
import logging
import random
import threading

import pytest

from emailops.core.errors import DailyQuotaExceeded, TransientError
from emailops.core.events import EventLog
from emailops.core.local_bucket import LocalBucketStore
from emailops.core.ratelimit import (
    PACING,
    Aimd,
    BucketUnavailable,
    QuotaRate,
    SharedRateLimiter,
)
from emailops.local_rate import local_rate_limiter

LOGGER = "tests.ratelimit"


class Time:
    """A clock and a sleep that advances it; records what was slept."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class Flaky:
    """A shared store that can be taken down (as Redis can), over a local one."""

    backend = "redis"

    def __init__(self, inner: LocalBucketStore) -> None:
        self.inner, self.down, self.calls = inner, False, 0

    def _check(self) -> None:
        self.calls += 1
        if self.down:
            raise BucketUnavailable("Redis at 127.0.0.1:6379: ConnectionError: refused")

    def reserve(self, **kwargs):
        self._check()
        return self.inner.reserve(**kwargs)

    def throttled(self, **kwargs):
        self._check()
        return self.inner.throttled(**kwargs)

    def pause(self, seconds):
        self._check()
        return self.inner.pause(seconds)


class Unusable:
    backend = "redis"

    def __getattr__(self, name):
        raise AssertionError(f"the store was used ({name})")


@pytest.fixture
def time_() -> Time:
    return Time()


@pytest.fixture
def shared(time_) -> Flaky:
    return Flaky(LocalBucketStore(lock=threading.Lock(), clock=time_.clock))


def make(time_, store, *, rate: float = 20.0, **kwargs) -> SharedRateLimiter:
    return SharedRateLimiter(
        max_rate=lambda: rate,
        store=store,
        fallback=LocalBucketStore(lock=threading.Lock(), clock=time_.clock),
        log=EventLog(logging.getLogger(LOGGER)),
        lock=threading.Lock(),
        sleep=time_.sleep,
        clock=time_.clock,
        **kwargs,
    )


def send_times(limiter: SharedRateLimiter, time_: Time, count: int) -> list[float]:
    times = []
    for _ in range(count):
        limiter.acquire()
        times.append(time_.now)
    return times


def busiest_second(times: list[float]) -> int:
    return max(sum(1 for t in times if start <= t < start + 1) for start in times)


def events(caplog, level: int = logging.DEBUG) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno >= level]


# --- Pacing ----------------------------------------------------------------------------------------


def test_sends_are_paced_under_the_rate_in_every_second(time_, shared):
    limiter = make(time_, shared, rate=20)
    times = send_times(limiter, time_, 100)
    assert times[0] == 1000.0  # the first send waits for nothing
    gaps = {round(b - a, 9) for a, b in itertools.pairwise(times)}
    assert gaps == {round(1 / (20 * PACING), 9)}
    assert busiest_second(times) <= 20
    achieved = (len(times) - 1) / (times[-1] - times[0])
    assert achieved == pytest.approx(20 * PACING)


def test_two_consumers_on_one_bucket_get_slots_exactly_apart_and_fill_every_second(time_):
    """Two processes sharing one Redis key: their sends interleave on one timeline, each exactly
    1/(rate x PACING) after the last whoever took it, so the rate is used (>= 95 %) and no second
    holds more than it."""
    bucket = LocalBucketStore(
        lock=threading.Lock(), clock=time_.clock
    )  # the one Redis key (its clock is Redis's TIME)
    first, second = make(time_, bucket, rate=10), make(time_, bucket, rate=10)
    times = []
    for limiter in [first, second, second, first, first, first, second] * 15:
        limiter.acquire()
        times.append(time_.now)
    gaps = {round(b - a, 9) for a, b in itertools.pairwise(times)}
    assert gaps == {round(1 / (10 * PACING), 9)}
    assert busiest_second(times) == 10
    assert (len(times) - 1) / (times[-1] - times[0]) >= 0.95 * 10


@pytest.mark.parametrize("rate", [10, 14, 50])
def test_sends_reaching_ses_late_within_the_slack_never_put_more_than_the_rate_in_a_second(
    time_, shared, rate
):
    """What PACING buys: a send may reach SES up to 1/PACING - 1 (31 ms) later than the one
    ``rate`` slots after it. The worst case: blocks of ``rate`` sends, alternately late and on
    time; then any lateness in [0, slack), drawn at random (seeded)."""
    limiter = make(time_, shared, rate=rate)
    slots = send_times(limiter, time_, 6 * rate)
    slack = 1 / PACING - 1
    assert slack >= 0.03
    blocks = [t + (0.999 * slack if (i // rate) % 2 == 0 else 0) for i, t in enumerate(slots)]
    assert busiest_second(sorted(blocks)) == rate
    rng = random.Random(18)
    jittered = sorted(t + rng.uniform(0, 0.999 * slack) for t in slots)
    assert busiest_second(jittered) <= rate


class SlowStore:
    """A shared store whose every answer takes 10 ms each way (a loaded Redis, a busy GIL)."""

    backend = "redis"

    def __init__(self, inner: LocalBucketStore, time_: Time) -> None:
        self.inner, self.time = inner, time_

    def reserve(self, **kwargs):
        self.time.now += 0.010  # the call on its way: the store reads its clock after this
        grant = self.inner.reserve(**kwargs)
        self.time.now += 0.010  # the answer on its way back
        return grant

    def throttled(self, **kwargs):
        return self.inner.throttled(**kwargs)

    def pause(self, seconds):
        return self.inner.pause(seconds)


def test_a_send_leaves_at_its_slot_not_a_reply_later(time_):
    """The store's ``wait`` counts from when it read its clock, between the call and the answer:
    the limiter sleeps to that moment plus ``wait``, not ``wait`` after the answer came."""
    bucket = LocalBucketStore(lock=threading.Lock(), clock=time_.clock)
    limiter = make(time_, SlowStore(bucket, time_), rate=10)
    leave = send_times(limiter, time_, 5)
    slots = [1000.010 + i / (10 * PACING) for i in range(5)]  # the store's clock: 10 ms in
    assert leave[0] == pytest.approx(1000.020)  # the first slot was "now": it is gone by the answer
    assert leave[1:] == pytest.approx(slots[1:], abs=1e-9)  # not 10 ms after each slot


def test_a_sleep_that_ends_early_sleeps_again_to_the_slot(time_, shared):
    limiter = make(time_, shared, rate=10)
    limiter.acquire()
    woke_early = []

    def sleep(seconds: float) -> None:
        if not woke_early:
            woke_early.append(seconds)
            seconds -= 0.004  # a timer that fires 4 ms early (coarse clocks, signals)
        time_.sleep(seconds)

    limiter.sleep = sleep
    limiter.acquire()
    assert time_.now == pytest.approx(1000 + 1 / (10 * PACING), abs=1e-9)
    assert time_.slept[-1] == pytest.approx(0.004)


def late_sleep(time_: Time, lateness: list[float]):
    """A sleep that oversleeps by the next of ``lateness`` (a CPU too busy to wake us on time)."""

    def sleep(seconds: float) -> None:
        time_.sleep(seconds + (lateness.pop(0) if lateness else 0.0))

    return sleep


def test_a_caller_woken_past_the_slack_lets_its_slot_pass_and_takes_the_next(time_, shared):
    """Reaching SES 50 ms after its slot, a send would share a second with the ``rate`` sends
    after it (11 in a second at 10/s): the slot is lost instead, and the send takes a new one."""
    limiter = make(time_, shared, rate=10)
    limiter.acquire()  # at 1000.0
    gap = 1 / (10 * PACING)
    limiter.sleep = late_sleep(time_, [0.050])
    limiter.acquire()
    assert time_.now == pytest.approx(1000 + 2 * gap)  # the slot after the one it overslept
    assert limiter.slots_given_up == 1
    limiter.sleep = late_sleep(time_, [0.020])  # within the slack (31 ms): the slot is used
    limiter.acquire()
    assert time_.now == pytest.approx(1000 + 3 * gap + 0.020)
    assert limiter.slots_given_up == 1


def test_a_slot_is_let_pass_once_per_send_so_a_lasting_overload_still_sends(time_, shared):
    limiter = make(time_, shared, rate=10)
    limiter.acquire()
    limiter.sleep = late_sleep(time_, [0.050, 0.050, 0.050])
    limiter.acquire()
    assert limiter.slots_given_up == 1
    gap = 1 / (10 * PACING)
    assert time_.now == pytest.approx(1000 + 2 * gap + 0.050)  # late again, and sent


def test_acquire_returns_the_seconds_waited_and_they_add_up(time_, shared):
    limiter = make(time_, shared, rate=10)
    waited = [limiter.acquire() for _ in range(5)]
    assert waited[0] == 0
    assert waited[1:] == pytest.approx([1 / (10 * PACING)] * 4)
    stats = limiter.stats()
    assert stats.waited_seconds == pytest.approx(sum(waited))
    assert stats.effective_rate == 10 and stats.backend == "redis"


def test_the_stores_round_trip_is_not_a_wait(time_, shared):
    """Every send at a rate counted as a rate-limit wait (the dashboard's chart): the time from
    asking the store to its answer was returned as waited, while nothing slept."""

    class SlowReply(Flaky):
        def reserve(self, **kwargs):
            grant = super().reserve(**kwargs)
            time_.now += 0.002  # Redis answers in 2 ms
            return grant

    limiter = make(time_, SlowReply(shared.inner), rate=1)
    assert limiter.acquire() == 0  # the first slot is free: no sleep, no wait
    time_.now += 5  # well after the next slot
    assert limiter.acquire() == 0
    assert limiter.acquire() > 0.5  # the next one did wait for its slot
    assert limiter.stats().waited_seconds == pytest.approx(sum(time_.slept))


def test_an_idle_bucket_does_not_save_up_a_burst(time_, shared):
    limiter = make(time_, shared, rate=10)
    limiter.acquire()
    time_.now += 60
    times = send_times(limiter, time_, 11)
    assert busiest_second(times) <= 10


def test_a_zero_rate_means_no_limit_and_no_store_call(time_):
    limiter = make(time_, Unusable(), rate=0)
    assert [limiter.acquire() for _ in range(1000)] == [0.0] * 1000
    assert time_.slept == []
    assert limiter.effective_rate == 0


def test_reservations_stop_at_the_horizon(time_):
    store = LocalBucketStore(lock=threading.Lock(), clock=time_.clock)
    grants = [store.reserve(rate=2, aimd=Aimd(), horizon=1.2) for _ in range(5)]
    assert [g.granted for g in grants] == [True, True, True, False, False]
    assert [g.wait for g in grants[:3]] == [0, 0.5, 1.0]
    assert grants[3].wait == pytest.approx(0.3)  # ask again when the next slot is in reach


def test_the_limiter_waits_out_the_horizon_then_sends(time_, shared):
    limiter = make(time_, shared, rate=1, horizon=0.5)
    shared.inner.reserve(rate=1, aimd=Aimd(), horizon=10)  # others took the next 3 slots
    shared.inner.reserve(rate=1, aimd=Aimd(), horizon=10)
    shared.inner.reserve(rate=1, aimd=Aimd(), horizon=10)
    waited = limiter.acquire()
    assert waited == pytest.approx(3.0)
    assert len(time_.slept) == 2  # once to come within the horizon, once to the slot


def test_threads_never_share_a_slot(time_):
    store = LocalBucketStore(
        lock=threading.Lock(), clock=time_.clock
    )  # the clock stands still: every slot is distinct
    waits: list[float] = []
    lock = threading.Lock()

    def take():
        for _ in range(50):
            grant = store.reserve(rate=100, aimd=Aimd(), horizon=100)
            with lock:
                waits.append(grant.wait)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert sorted(waits) == pytest.approx([i / 100 for i in range(400)])


# --- AIMD ------------------------------------------------------------------------------------------


def test_throttling_halves_the_shared_rate_and_it_recovers_step_by_step(time_, shared):
    limiter = make(time_, shared, rate=20)
    limiter.on_throttled()
    assert limiter.effective_rate == 10
    limiter.acquire()
    gap = send_times(limiter, time_, 2)
    assert gap[1] - gap[0] == pytest.approx(1 / (10 * PACING))
    time_.now += 5  # +5 % of the max every 5 s without throttling
    limiter.acquire()
    assert limiter.effective_rate == pytest.approx(11)
    time_.now += 100
    limiter.acquire()
    assert limiter.effective_rate == 20  # never above the max


def test_a_burst_of_throttles_is_one_cut(time_, shared, caplog):
    limiter = make(time_, shared, rate=20)
    caplog.set_level(logging.WARNING, logger=LOGGER)
    for _ in range(10):
        limiter.on_throttled()  # many threads hitting the same overload
    assert limiter.effective_rate == 10
    time_.now += limiter.aimd.cooldown
    limiter.on_throttled()
    assert limiter.effective_rate == pytest.approx(5.5)  # one recovery step, then the cut
    assert "event=ses.throttled max_rate=20 effective_rate=5.5" in events(caplog)


def test_sends_reserved_before_a_cut_are_the_same_overload_not_new_cuts(time_, shared):
    """Slots are handed out up to ``horizon`` ahead, so sends reserved at the old rate keep
    leaving (and being throttled) for that long after a cut: they must not cut again."""
    limiter = make(time_, shared, rate=0.5 / 0.1, horizon=5.0)  # floor: 1/s = 0.2 of the max
    limiter.on_throttled()
    for delay in (1.5, 1.5, 1.9, 1.0):  # throttles of sends reserved before the cut
        time_.now += delay
        limiter.on_throttled()
    # Halved once (then one +5 % recovery step at 5 s), not 0.5 -> 0.25 -> 0.2 (the floor).
    assert limiter.effective_rate == pytest.approx(5 * (0.5 + 0.05))
    assert limiter.aimd.cooldown > limiter.horizon


@pytest.mark.parametrize(("rate", "floor"), [(20, 2), (5, 1), (0.5, 0.5)])
def test_cuts_stop_at_the_floor(time_, shared, rate, floor):
    limiter = make(time_, shared, rate=rate)
    for _ in range(20):
        limiter.on_throttled()
        time_.now += limiter.aimd.cooldown
    limiter.on_throttled()
    assert limiter.effective_rate == pytest.approx(floor)  # 10 % of the max, at least 1/s


def test_throttling_without_a_limit_changes_nothing(time_):
    limiter = make(time_, Unusable(), rate=0)
    limiter.on_throttled()
    assert limiter.acquire() == 0


# --- The daily quota -------------------------------------------------------------------------------


def test_the_daily_quota_pauses_sending_without_sleeping(time_, shared, caplog):
    limiter = make(time_, shared, rate=20, pause_seconds=600)
    limiter.acquire()
    limiter.on_daily_quota_exceeded()
    slept = list(time_.slept)
    with pytest.raises(DailyQuotaExceeded) as info:
        limiter.acquire()
    assert isinstance(info.value, TransientError)  # the record stays on the queue
    assert "600 s" in info.value.reason
    assert time_.slept == slept
    time_.now += 599
    with pytest.raises(DailyQuotaExceeded):
        limiter.acquire()
    time_.now += 1
    limiter.acquire()
    assert any("event=ses.daily_quota_exceeded" in line for line in events(caplog))


def test_a_pause_set_by_another_consumer_holds_here(time_, shared):
    limiter = make(time_, shared, rate=20)
    shared.inner.pause(30)  # another process met the quota
    with pytest.raises(DailyQuotaExceeded):
        limiter.acquire()
    assert time_.slept == []


def test_the_pause_holds_without_a_rate_limit_too(time_):
    limiter = make(time_, Unusable(), rate=0, pause_seconds=60)
    limiter.store = LocalBucketStore(lock=threading.Lock(), clock=time_.clock)
    limiter.on_daily_quota_exceeded()
    with pytest.raises(DailyQuotaExceeded):
        limiter.acquire()
    time_.now += 60
    assert limiter.acquire() == 0


# --- Falling back when the shared store is down ----------------------------------------------------


def test_an_unreachable_store_falls_back_loudly_and_comes_back(time_, shared, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    limiter = make(time_, shared, rate=20, probe_every=5, alarm_every=60)
    shared.down = True

    limiter.acquire()  # still sends, paced by this process alone
    assert limiter.backend == "local"
    [alarm] = events(caplog, logging.ERROR)
    assert alarm.startswith("event=rate_limit.backend_unreachable backend=redis fallback=local")
    assert "ConnectionError" in alarm

    calls = shared.calls
    times = send_times(limiter, time_, 10)  # ~2 s: probes every 5 s, not per send
    assert shared.calls == calls
    assert busiest_second(times) <= 5  # a quarter of the rate: 4 consumers stay near 20/s
    time_.now += 5
    limiter.acquire()
    assert shared.calls == calls + 1  # one probe, failed
    assert len(events(caplog, logging.ERROR)) == 1  # at most one ERROR a minute
    time_.now += 60
    limiter.acquire()
    assert len(events(caplog, logging.ERROR)) == 2

    shared.down = False
    time_.now += 5
    limiter.acquire()
    assert limiter.backend == "redis"
    assert any(e.startswith("event=rate_limit.backend_restored") for e in events(caplog))
    calls = shared.calls
    limiter.acquire()
    assert shared.calls == calls + 1  # every send goes to the shared store again


def test_without_the_shared_store_each_process_takes_its_share_of_the_rate(time_, shared, caplog):
    caplog.set_level(logging.ERROR, logger=LOGGER)
    limiter = make(time_, shared, rate=20, fallback_consumers=5)
    shared.down = True
    times = send_times(limiter, time_, 20)
    assert busiest_second(times) <= 4  # 20/s shared by 5 consumers, not 20/s each
    assert times[-1] - times[0] == pytest.approx(19 / (4 * PACING))
    [alarm] = events(caplog, logging.ERROR)
    assert "fallback_consumers=5" in alarm and "fallback_rate=4.0" in alarm


def test_throttling_and_pausing_still_work_while_the_store_is_down(time_, shared):
    limiter = make(time_, shared, rate=20)
    shared.down = True
    limiter.on_throttled()
    assert limiter.effective_rate == 10 and limiter.backend == "local"
    limiter.on_daily_quota_exceeded()
    with pytest.raises(DailyQuotaExceeded):
        limiter.acquire()


def test_a_pause_outlives_the_store_that_recorded_it(time_, shared):
    limiter = make(time_, shared, rate=20)
    limiter.on_daily_quota_exceeded()
    shared.down = True  # the fallback never heard of the pause
    with pytest.raises(DailyQuotaExceeded):
        limiter.acquire()


# --- SES's MaxSendRate, refreshed ------------------------------------------------------------------


def test_quota_rate_is_read_then_refreshed_every_five_minutes(time_, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    answers = iter([14.0, 28.0])
    fetched: list[float] = []

    def fetch() -> float:
        fetched.append(time_.now)
        return next(answers)

    rate = QuotaRate(
        fetch, log=EventLog(logging.getLogger(LOGGER)), lock=threading.Lock(), clock=time_.clock
    )
    assert rate() == 14
    time_.now += 299
    assert rate() == 14 and len(fetched) == 1
    time_.now += 1
    assert rate() == 28 and len(fetched) == 2
    assert "event=ses.send_rate max_rate=28.0 source=GetSendQuota" in events(caplog)


def test_quota_rate_keeps_the_last_rate_when_ses_fails(time_, caplog):
    answers: list = [TransientError("read SES send quota", reason="503"), 14.0]
    answers += [TransientError("read SES send quota", reason="503"), 20.0]

    def fetch() -> float:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    rate = QuotaRate(
        fetch, log=EventLog(logging.getLogger(LOGGER)), lock=threading.Lock(), clock=time_.clock
    )
    assert rate() == 1.0  # nothing known yet: SES's sandbox rate, the safe guess
    assert rate() == 1.0 and len(answers) == 3  # retried after 30 s, not on every call
    time_.now += 30
    assert rate() == 14
    time_.now += 300
    assert rate() == 14  # the refresh failed: keep what we had
    time_.now += 30
    assert rate() == 20
    assert sum("event=ses.send_quota_unavailable" in e for e in events(caplog)) == 2


def test_a_known_pause_spares_the_store_a_call(time_, shared):
    limiter = make(time_, shared, rate=20)
    shared.inner.pause(30)
    with pytest.raises(DailyQuotaExceeded):
        limiter.acquire()
    calls = shared.calls
    with pytest.raises(DailyQuotaExceeded):
        limiter.acquire()
    assert shared.calls == calls


def test_a_probe_that_breaks_unexpectedly_does_not_stop_later_probes(time_, shared):
    limiter = make(time_, shared, rate=20, probe_every=5)
    shared.down = True
    limiter.acquire()
    shared.down = False
    broken = shared.inner.reserve
    shared.inner.reserve = lambda **_: 1 / 0  # a bug, not an outage
    time_.now += 5
    with pytest.raises(ZeroDivisionError):
        limiter.acquire()
    shared.inner.reserve = broken
    time_.now += 5
    limiter.acquire()
    assert limiter.backend == "redis"


def test_a_local_limiter_for_tests_and_benchmarks(time_):
    limiter = local_rate_limiter(10, sleep=time_.sleep, clock=time_.clock)
    times = send_times(limiter, time_, 21)
    assert busiest_second(times) <= 10 and limiter.backend == "local"
    assert local_rate_limiter(0, sleep=time_.sleep, clock=time_.clock).acquire() == 0
