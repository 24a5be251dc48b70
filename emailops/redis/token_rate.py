"""Each token's own limit on emails per minute: a fixed one-minute window in Redis, shared by every
API process.

One Lua script checks the window's counter, adds the request's cost (its recipients) only if it
fits, and sets the expiry, in one atomic step: a refused request costs nothing. If Redis cannot
be reached the request is refused (RateLimitUnavailable → 503 + Retry-After): letting everything
through would turn a Redis outage into an unlimited send path.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis

from emailops.core.errors import SharedStateUnavailable
from emailops.core.events import EventLog
from emailops.redis.client import connect, location, translated

__all__ = [
    "Decision",
    "RateLimitUnavailable",
    "TokenRateLimiter",
    "connect_fail_fast",
]

logger = logging.getLogger("emailops.api")

WINDOW_SECONDS = 60
KEY_PREFIX = "emailops:api:rpm:"  # then the token's hash, then the window number
# KEYS[1] the window; ARGV: expiry seconds, cost, limit. Returns the new count, or -1 if refused.
_INCREMENT = """
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count + tonumber(ARGV[2]) > tonumber(ARGV[3]) then return -1 end
count = redis.call('INCRBY', KEYS[1], ARGV[2])
if count == tonumber(ARGV[2]) then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return count
"""
RETRY_AFTER_UNAVAILABLE = 5


class RateLimitUnavailable(SharedStateUnavailable):
    """The shared counter cannot be reached: refuse rather than let everything through."""

    retry_after = RETRY_AFTER_UNAVAILABLE


@dataclass(frozen=True)
class Decision:
    allowed: bool
    retry_after: int = 0  # seconds until the window ends, when refused


class TokenRateLimiter:
    def __init__(
        self, client: redis.Redis, *, prefix: str, clock: Callable[[], float] = time.time
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.clock = clock
        self._increment = client.register_script(_INCREMENT)
        self._where = location(client)

    def hit(self, token_key: str, *, per_minute: int, cost: int = 1) -> Decision:
        """Count ``cost`` emails for ``token_key``; refuse (counting nothing) if they would take
        the window past ``per_minute`` (0: no limit). Raises RateLimitUnavailable."""
        if per_minute <= 0:
            return Decision(True)
        now, key = self._window_key(token_key)
        count = self._run(
            lambda: int(self._increment(keys=[key], args=[WINDOW_SECONDS + 1, cost, per_minute]))
        )
        return Decision(True) if count >= 0 else _refused(now)

    def check(self, token_key: str, *, per_minute: int) -> Decision:
        """Whether ``token_key`` has room for one more in this window, counting nothing (0: no
        limit). Raises RateLimitUnavailable."""
        if per_minute <= 0:
            return Decision(True)
        now, key = self._window_key(token_key)
        count = self._run(lambda: int(self.client.get(key) or 0))
        return Decision(True) if count < per_minute else _refused(now)

    def _window_key(self, token_key: str) -> tuple[float, str]:
        now = self.clock()
        return now, f"{self.prefix}{token_key}:{int(now // WINDOW_SECONDS)}"

    def _run(self, call: Callable[[], int]) -> int:
        try:
            with translated(self._where):
                return call()
        except SharedStateUnavailable as exc:
            EventLog(logger).error("api.rate_limit_unavailable", error=str(exc))
            raise RateLimitUnavailable("the rate limiter is unavailable") from exc


def _refused(now: float) -> Decision:
    """Refused until the window ``now`` falls in ends."""
    window = int(now // WINDOW_SECONDS)
    return Decision(False, retry_after=max(1, (window + 1) * WINDOW_SECONDS - int(now)))


def connect_fail_fast(url: str) -> redis.Redis:
    """A client that gives up at once: with Redis down, every API request would otherwise wait
    out redis-py's retries before being refused."""
    return connect(url, retries=0)
