"""One SES send rate shared by every consumer: pacing, AIMD on throttling, the daily-quota pause.

The limiter is written against a small *bucket store* that keeps the shared state: the next free
send slot, the AIMD factor and the pause. ``emailops.core.local_bucket`` keeps it per process;
``emailops.redis.rate.RedisBucketStore`` keeps it in Redis, where one Lua script updates it
atomically for every process on every machine. When Redis cannot be reached the limiter says so
loudly, uses the local store, and goes back to Redis as soon as a probe succeeds.

Why slots (GCRA with zero burst, reserving) rather than a sliding-window log: each grant is spaced
``1/rate`` after the previous one, so no window of one second can hold more than the rate, whatever
the number of callers; the state is O(1) (not a sorted set of every send), fractional rates such as
0.5/s after an AIMD cut work as they are, and a caller is told *its* slot, so it sleeps once and
makes one store call per email instead of many callers waking together to race for the next token.

What SES counts is when a send *arrives*: slot + the time from the slot to SES. Only the spread of
that time matters, and it is kept small: the caller takes its slot in the sender's ``before_send``,
after the SDK has built and signed the request, and sleeps to a deadline on its own clock, once. We
pace at ``PACING`` (97 %) of the rate, and a caller that wakes too late after its slot (a starved
CPU) lets it pass and takes a new one, once: a slot lost rather than a second over the rate. The
figures behind 97 % (bench/send_rate_cap.py) are in docs/send-rate.md.

No threads are started and no I/O is done here: locks, clock, sleep and the stores are injected.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Protocol

from emailops.core.errors import DailyQuotaExceeded, EmailOpsError, SharedStateUnavailable
from emailops.core.events import EventLog

__all__ = [
    "PACING",
    "Aimd",
    "BucketStore",
    "BucketUnavailable",
    "Grant",
    "LimiterStats",
    "QuotaRate",
    "SharedRateLimiter",
    "aimd_factor",
]

PACING = 0.97
# A send leaves at its slot and SES answers within about this long: a throttle that late after a
# slot still comes from a send reserved before the cut.
SEND_SLACK = 1.0


class BucketUnavailable(SharedStateUnavailable):
    """The shared store cannot be reached (the limiter falls back to the local one)."""


@dataclass(frozen=True)
class Aimd:
    """Multiplicative decrease on throttling, additive recovery, as fractions of the max rate."""

    decrease: float = 0.5  # a throttle multiplies the rate by this
    floor: float = 0.1  # never below this fraction of the max (nor below 1/s, see floor_for)
    step: float = 0.05  # recovery: + this fraction of the max ...
    every: float = 5.0  # ... every this many seconds without throttling
    # Throttles within this long of a cut are the same overload: one cut. SharedRateLimiter
    # raises it above its reservation horizon (see there).
    cooldown: float = 1.0

    def floor_for(self, max_rate: float) -> float:
        """The floor as a factor: 10 % of the max, or 1/s when that is more (capped at the max)."""
        return min(1.0, max(self.floor, 1.0 / max_rate))


def aimd_factor(aimd: Aimd, factor: float | None, since: float, now: float) -> float:
    """The factor in force at ``now``, after a cut to ``factor`` at ``since`` (None: never cut).

    Recovery is computed, not stored: nobody has to remember to raise the rate again.
    """
    if factor is None:
        return 1.0
    steps = math.floor(max(0.0, now - since) / aimd.every)
    return min(1.0, factor + aimd.step * steps)


@dataclass(frozen=True)
class Grant:
    """A store's answer to "reserve one send".

    ``granted``: a slot is ours, ``wait`` seconds from now. Otherwise nothing was reserved and the
    caller asks again after ``wait`` seconds. ``paused`` > 0: sending is paused that much longer.
    """

    granted: bool
    wait: float
    factor: float
    paused: float = 0.0


class BucketStore(Protocol):
    backend: str  # "redis" | "local", for the stats line

    def reserve(self, *, rate: float, aimd: Aimd, horizon: float) -> Grant:
        """Reserve the next slot at ``rate`` times the AIMD factor, unless it is more than
        ``horizon`` seconds away. Raises BucketUnavailable."""
        ...

    def throttled(self, *, aimd: Aimd, floor: float) -> float:
        """Cut the shared factor (once per cooldown); return the factor now in force."""
        ...

    def pause(self, seconds: float) -> None:
        """Pause every sender for ``seconds`` (extends, never shortens, a pause)."""
        ...


class QuotaRate:
    """SES's MaxSendRate, fetched now and then (GetSendQuota), as a callable for the limiter.

    A failed refresh keeps the last rate (or ``fallback`` before the first success) and tries
    again after ``retry_after``; only one caller refreshes at a time, the others use the old rate.
    """

    def __init__(
        self,
        fetch: Callable[[], float],
        *,
        log: EventLog,
        lock: AbstractContextManager,
        every: float = 300.0,
        retry_after: float = 30.0,
        fallback: float = 1.0,  # SES's sandbox rate: the safe guess
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.fetch, self.log, self.clock = fetch, log, clock
        self.every, self.retry_after = every, retry_after
        self._rate = fallback
        self._next = -math.inf
        self._lock = lock

    def __call__(self) -> float:
        now = self.clock()
        with self._lock:
            if now < self._next:
                return self._rate
            self._next = now + self.retry_after  # claimed: others keep the current rate
        try:
            rate = float(self.fetch())
        except EmailOpsError as exc:
            self.log.error("ses.send_quota_unavailable", rate=self._rate, reason=exc.describe())
            return self._rate
        with self._lock:
            if rate != self._rate:
                self.log.info("ses.send_rate", max_rate=rate, source="GetSendQuota")
            self._rate, self._next = rate, now + self.every
        return rate


@dataclass(frozen=True)
class LimiterStats:
    waited_seconds: float  # total time callers spent in acquire()
    effective_rate: float  # emails/s in force now (max times the AIMD factor); 0 = no limit
    backend: str  # "redis" | "local"


class SharedRateLimiter:
    """The pipeline's SendRateLimiter: ``acquire()`` before each SES send.

    ``max_rate`` is a callable (a constant, or QuotaRate); 0 or less means no limit. ``store`` is
    the shared store (Redis), ``fallback`` the per-process one used while ``store`` is down; each
    process then takes ``1/fallback_consumers`` of the rate (SES_RATE_FALLBACK_CONSUMERS), so the
    consumers together stay near the account's rate rather than each sending at all of it.

    Slots are reserved up to ``horizon`` seconds ahead, so for that long after a cut, sends reserved
    at the old rate still leave and are throttled too. The AIMD cooldown is therefore at least
    ``horizon + SEND_SLACK``: one overload is one cut (0.5, not 0.5 -> 0.25 -> 0.125 -> floor,
    which took about 90 s to recover from).
    """

    def __init__(
        self,
        *,
        max_rate: Callable[[], float],
        store: BucketStore,
        fallback: BucketStore,
        log: EventLog,
        lock: AbstractContextManager,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        aimd: Aimd = Aimd(),
        pause_seconds: float = 600.0,
        horizon: float = 5.0,  # reserve at most this far ahead (bounds a stale reservation)
        probe_every: float = 5.0,  # while down, try the shared store again this often
        alarm_every: float = 60.0,  # while down, log the ERROR at most this often
        fallback_consumers: int = 4,
        pacing: float = PACING,
        late_limit: float | None = None,  # default: the slack PACING leaves, 1/PACING - 1 s
    ) -> None:
        self.max_rate, self.store, self.fallback = max_rate, store, fallback
        self.log, self.sleep, self.clock = log, sleep, clock
        self.aimd = replace(aimd, cooldown=max(aimd.cooldown, horizon + SEND_SLACK))
        self.pause_seconds, self.horizon = pause_seconds, horizon
        self.pacing = pacing
        self.late_limit = 1 / pacing - 1 if late_limit is None else late_limit
        self._slots_given_up = 0
        self.fallback_consumers = max(1, fallback_consumers)
        self.probe_every, self.alarm_every = probe_every, alarm_every
        self._lock = lock
        self._down = False  # the shared store failed; using the fallback
        self._probing = False
        self._next_probe = -math.inf
        self._next_alarm = -math.inf
        self._paused_until = -math.inf  # known locally: the no-limit path checks only this
        self._waited = 0.0
        self._factor = 1.0
        self._rate = 0.0

    # --- SendRateLimiter ----------------------------------------------------------------------

    def acquire(self) -> float:
        rate = self.max_rate()
        start = self.clock()
        # A pause known here holds even if the store that recorded it has since gone away.
        self._raise_if_paused(self._paused_until - start)
        if rate <= 0:
            self._rate = 0.0
            return 0.0
        gave_up = False  # once per send: under a lasting overload a send must still go
        # Seconds slept for a slot: the store's round trip is not a wait (counted as one, every
        # send at a rate was a "rate-limit wait" on the dashboard while rateLimitWaitSeconds was 0).
        waited = 0.0
        while True:
            asked = self.clock()
            grant = self._call(
                lambda s: s.reserve(
                    rate=rate * self.pacing / self._share(s), aimd=self.aimd, horizon=self.horizon
                )
            )
            # The store measured ``wait`` from a moment between asking and hearing back: the
            # midpoint is the best guess of it here, so the send leaves at its slot and not one
            # reply's delay (variable: GIL, a loaded Redis) after it.
            deadline = (asked + self.clock()) / 2 + grant.wait
            self._rate, self._factor = rate, grant.factor
            if grant.paused > 0:  # another consumer met the quota: remember it, skip the store
                with self._lock:
                    self._paused_until = max(self._paused_until, self.clock() + grant.paused)
                self._raise_if_paused(grant.paused)
            waited += self._sleep_until(deadline)
            if not grant.granted:
                continue
            late = self.clock() - deadline
            if late > self.late_limit and not gave_up:
                # Woken this late (a starved CPU), the send would reach SES within a second of
                # the ``rate`` sends reserved after it: let the slot pass and take a new one.
                gave_up = True
                with self._lock:
                    self._slots_given_up += 1
                continue
            break
        with self._lock:
            self._waited += waited
        return waited

    def on_throttled(self) -> None:
        rate = self.max_rate()
        if rate <= 0:
            return  # no limit was asked for: nothing to lower
        floor = self.aimd.floor_for(rate)
        factor = self._call(lambda s: s.throttled(aimd=self.aimd, floor=floor))
        self._rate, self._factor = rate, factor
        self.log.warning(
            "ses.throttled", max_rate=rate, effective_rate=round(rate * self._factor, 3)
        )

    def on_daily_quota_exceeded(self) -> None:
        with self._lock:
            self._paused_until = max(self._paused_until, self.clock() + self.pause_seconds)
        self._call(lambda s: s.pause(self.pause_seconds))
        self.log.error("ses.daily_quota_exceeded", paused_seconds=self.pause_seconds)

    # --- figures for the stats line ------------------------------------------------------------

    @property
    def waited_seconds(self) -> float:
        return self._waited

    @property
    def slots_given_up(self) -> int:
        """Slots let pass because the caller woke more than ``late_limit`` after them."""
        return self._slots_given_up

    @property
    def effective_rate(self) -> float:
        return self._rate * self._factor

    @property
    def backend(self) -> str:
        return self.fallback.backend if self._down else self.store.backend

    def stats(self) -> LimiterStats:
        return LimiterStats(self._waited, self.effective_rate, self.backend)

    # --- internals -------------------------------------------------------------------------------

    def _sleep_until(self, deadline: float) -> float:
        """Sleep to ``deadline`` on this process's clock: one sleep, again only if woken early.
        Returns the seconds slept (0 when the deadline had passed)."""
        start = now = self.clock()
        while (left := deadline - now) > 0:
            self.sleep(left)
            now = self.clock()
        return now - start

    def _share(self, store: BucketStore) -> int:
        """How many processes split the rate on ``store``: all of them on the shared one."""
        return self.fallback_consumers if store is self.fallback else 1

    def _raise_if_paused(self, remaining: float) -> None:
        if remaining > 0:
            raise DailyQuotaExceeded(
                "send email",
                reason=f"SES daily quota reached; sending paused for {math.ceil(remaining)} s more",
            )

    def _call(self, operation):
        """Run ``operation`` on the shared store, or on the fallback while it is down."""
        now = self.clock()
        with self._lock:
            probe = self._down and not self._probing and now >= self._next_probe
            if probe:
                self._probing = True
            use_store = not self._down or probe
        if not use_store:
            return operation(self.fallback)
        try:
            result = operation(self.store)
        except BucketUnavailable as exc:
            self._went_down(now, str(exc))
            return operation(self.fallback)
        finally:
            if probe:  # whatever happened, the next probe is allowed
                with self._lock:
                    self._probing = False
        if probe:
            with self._lock:
                self._down = False
            self.log.warning("rate_limit.backend_restored", backend=self.store.backend)
        return result

    def _went_down(self, now: float, reason: str) -> None:
        with self._lock:
            self._down = True
            self._next_probe = now + self.probe_every
            alarm = now >= self._next_alarm
            if alarm:
                self._next_alarm = now + self.alarm_every
        if alarm:
            consumers = self.fallback_consumers
            self.log.error(
                "rate_limit.backend_unreachable",
                backend=self.store.backend,
                fallback=self.fallback.backend,
                reason=reason,
                fallback_consumers=consumers,
                fallback_rate=round(self.max_rate() / consumers, 3),
                note=f"each process now sends at most 1/{consumers} of the rate "
                "(SES_RATE_FALLBACK_CONSUMERS)",
            )
