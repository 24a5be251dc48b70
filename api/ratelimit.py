"""Each token's own limit: a fixed one-minute window in Redis, shared by every API process.

One Lua script increments the window's counter and sets its expiry in one atomic step. If Redis
cannot be reached the request is let through (and logged): the per-token limit guards against a
runaway producer, while SES's own send rate is guarded by the pipeline's limiter.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis
from django.conf import settings
from redis.backoff import NoBackoff
from redis.retry import Retry

from emailops.core.events import EventLog

__all__ = ["Decision", "TokenRateLimiter", "connect", "token_rate_limiter"]

logger = logging.getLogger("emailops.api")

WINDOW_SECONDS = 60
KEY_PREFIX = "emailops:api:rpm:"  # then the token's hash, then the window number
_INCREMENT = """
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return count
"""


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

    def hit(self, token_key: str, *, per_minute: int) -> Decision:
        """Count one request for ``token_key``; refuse it past ``per_minute`` (0: no limit)."""
        if per_minute <= 0:
            return Decision(True)
        now = self.clock()
        window = int(now // WINDOW_SECONDS)
        key = f"{self.prefix}{token_key}:{window}"
        try:
            count = int(self._increment(keys=[key], args=[WINDOW_SECONDS + 1]))
        except redis.RedisError as exc:
            EventLog(logger).warning("api.rate_limit_unavailable", error=str(exc))
            return Decision(True)
        if count <= per_minute:
            return Decision(True)
        return Decision(False, retry_after=max(1, (window + 1) * WINDOW_SECONDS - int(now)))


def connect(url: str) -> redis.Redis:
    """A client that gives up at once: with Redis down, every API request would otherwise wait
    out redis-py's retries before being let through."""
    return redis.Redis.from_url(
        url, socket_connect_timeout=0.5, socket_timeout=0.5, retry=Retry(NoBackoff(), 0)
    )


@functools.cache
def token_rate_limiter() -> TokenRateLimiter:
    return TokenRateLimiter(connect(settings.REDIS_URL), prefix=KEY_PREFIX)
