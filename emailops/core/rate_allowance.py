"""This process's share of the rate safeguard's shared counters, reserved in blocks.

The Go consumer counts each send with one ``ADD 1`` on the window's counter row and refuses it
when the new count is over the cap. Doing the same per email costs a round trip per counter per
email. Instead one conditional ``ADD n`` (granted only while the row's count stays at most the
cap: ``RateCounters.reserve``) hands this process ``n`` sends of that window, which it then spends
with no call. The shared row always counts every send any process may still make in the window,
so the cap holds across our consumers and Go's (whose ``ADD 1`` sees our blocks as spent), and it
never goes above the cap by our writes. What a process leaves unspent is given back
(``ADD -unspent``) once the window is over (``settle``), so the row then shows the sends made.

The block is at most a tenth of the cap (and at most ``most``): a process that reserved a block
and went quiet holds back at most that much of the window from the others, and only until the
window ends. A cap under 10 is taken one send at a time, as Go does. A denial is not counted: a
full row stays at the cap.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Protocol

from emailops.core.errors import EmailOpsError
from emailops.core.events import EventLog

__all__ = ["BLOCK_MOST", "RateAllowance", "Reserving"]

logger = logging.getLogger("emailops.send_guard")

BLOCK_MOST = 64  # sends reserved in one call at most, whatever the cap


class Reserving(Protocol):
    def reserve(self, bucket: str, n: int, *, cap: int, expires_at: int) -> int:
        """Add up to ``n`` to the bucket's count without taking it over ``cap``: how many were
        added (0 when the row is at the cap)."""
        ...

    def increment(self, bucket: str, *, expires_at: int, by: int = 1) -> int: ...


@dataclass(eq=False, kw_only=True)
class RateAllowance:
    """Sends reserved and not yet spent, per counter bucket. ``lock`` guards the local counts
    (threads of one process share an allowance); no call is made holding it."""

    counters: Reserving
    lock: AbstractContextManager = field(default_factory=nullcontext)
    most: int = BLOCK_MOST
    _left: dict[str, int] = field(default_factory=dict, repr=False)
    _ends: dict[str, int] = field(default_factory=dict, repr=False)  # bucket -> its window's end
    # Buckets whose row said "full" this window: refused with no call until the window ends (the
    # row only goes down as a stopping process gives back; refusing is always within the cap).
    _full: dict[str, int] = field(default_factory=dict, repr=False)

    def block(self, cap: int) -> int:
        return max(1, min(self.most, cap // 10))

    def take(self, bucket: str, *, cap: int, now: float, window_end: int, expires_at: int) -> bool:
        """One send of ``bucket``'s window: from the reserved block, else a new block. False
        when the shared row has no room left (the send is over the cap). Raises the counters'
        EmailOpsError. Ended windows not yet settled are settled first (a process that never
        calls ``settle``, the API's, holds nothing for long)."""
        with self.lock:
            stale = any(end <= now for end in self._ends.values()) or any(
                end <= now for end in self._full.values()
            )
        if stale:
            self.settle(now)
        with self.lock:
            if self._left.get(bucket, 0) > 0:
                self._left[bucket] -= 1
                return True
            if bucket in self._full:
                return False
        granted = self.counters.reserve(bucket, self.block(cap), cap=cap, expires_at=expires_at)
        if granted <= 0:
            with self.lock:
                self._full[bucket] = window_end
            return False
        with self.lock:
            self._left[bucket] = self._left.get(bucket, 0) + granted - 1
            self._ends[bucket] = window_end
        return True

    def give_back(self, bucket: str) -> None:
        """A send taken and not made (a duplicate, another consumer's claim): spendable again."""
        with self.lock:
            if bucket in self._ends:
                self._left[bucket] = self._left.get(bucket, 0) + 1

    def settle(self, now: float, *, everything: bool = False) -> None:
        """Give back to the shared rows what ended windows left unspent (``everything``: the
        current window's too, as a consumer stops)."""
        with self.lock:
            done = [b for b, end in self._ends.items() if everything or end <= now]
            unspent = {b: self._left.pop(b, 0) for b in done}
            for bucket in done:
                del self._ends[bucket]
            for bucket in [b for b, end in self._full.items() if end <= now]:
                del self._full[bucket]
        for bucket, n in unspent.items():
            if n <= 0:
                continue
            try:
                self.counters.increment(bucket, expires_at=int(now) + 120, by=-n)
            except EmailOpsError as exc:  # over-counted, never under: the row expires anyway
                EventLog(logger).warning(
                    "rate.give_back_failed", bucket=bucket, error=exc.describe()
                )
