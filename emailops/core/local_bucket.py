"""The send-rate bucket of one process: the limiter's fallback while Redis is down, and tests'.

The same state and rules as the Redis bucket (``emailops.redis.rate``), under an injected lock.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import AbstractContextManager

from emailops.core.ratelimit import Aimd, Grant, aimd_factor

__all__ = ["LocalBucketStore"]


class LocalBucketStore:
    """The shared state of one process, under a lock (the fallback, and tests)."""

    backend = "local"

    def __init__(
        self, *, lock: AbstractContextManager, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.clock = clock
        self._lock = lock
        self._next_slot = -math.inf
        self._factor: float | None = None
        self._since = 0.0
        self._paused_until = -math.inf

    def reserve(self, *, rate: float, aimd: Aimd, horizon: float) -> Grant:
        with self._lock:
            now = self.clock()
            factor = aimd_factor(aimd, self._factor, self._since, now)
            if self._paused_until > now:
                return Grant(False, 0.0, factor, paused=self._paused_until - now)
            slot = max(self._next_slot, now)
            if slot - now > horizon:
                return Grant(False, slot - now - horizon, factor)
            self._next_slot = slot + 1.0 / (rate * factor)
            return Grant(True, slot - now, factor)

    def throttled(self, *, aimd: Aimd, floor: float) -> float:
        with self._lock:
            now = self.clock()
            factor = aimd_factor(aimd, self._factor, self._since, now)
            if self._factor is None or now - self._since >= aimd.cooldown:
                factor = max(floor, factor * aimd.decrease)
                self._factor, self._since = factor, now
            return factor

    def pause(self, seconds: float) -> None:
        with self._lock:
            self._paused_until = max(self._paused_until, self.clock() + seconds)
