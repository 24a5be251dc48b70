"""Pacing a loop to a rate (redrive, bulk resend): each ``wait()`` returns no sooner than
``1/rate`` seconds after the previous slot, without bursting to catch up after a slow step."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["Pacer"]


class Pacer:
    def __init__(
        self,
        rate: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """``rate``: steps per second; 0 or less means no pacing."""
        self.interval = 1.0 / rate if rate > 0 else 0.0
        self.clock = clock
        self.sleep = sleep
        self._next: float | None = None

    def wait(self) -> float:
        """Block until the next slot; returns how long it slept."""
        now = self.clock()
        if self._next is None or self.interval == 0:
            self._next = now + self.interval
            return 0.0
        delay = max(0.0, self._next - now)
        if delay:
            self.sleep(delay)
        self._next = max(self._next, now) + self.interval
        return delay
