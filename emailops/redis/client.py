"""The one way this project connects to Redis, and the one place Redis's exceptions become core's.

Every store here keeps short timeouts: a slow Redis must cost a probe, not a stalled consumer or a
hung API request. Callers above this package catch ``SharedStateUnavailable`` (or one of core's
subclasses of it), never ``redis.RedisError``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from emailops.core.errors import SharedStateUnavailable

__all__ = ["connect", "location", "reachable", "translated", "translating"]

T = TypeVar("T")


def connect(
    url: str, *, timeout: float = 0.5, retries: int = 1, decode_responses: bool = False
) -> redis.Redis:
    """A client with ``timeout`` seconds to connect and to answer. ``retries`` immediate retries
    (1 reconnects a pooled connection that died with a Redis restart; 0 gives up at once)."""
    return redis.Redis.from_url(
        url,
        socket_connect_timeout=timeout,
        socket_timeout=timeout,
        retry=Retry(NoBackoff(), retries),
        decode_responses=decode_responses,
    )


def reachable(url: str, *, timeout: float = 2.0) -> bool:
    """Whether a Redis answers PING at ``url`` (for tools that say what they ran against)."""
    try:
        return bool(connect(url, timeout=timeout, retries=0).ping())
    except redis.RedisError:
        return False


def location(client: redis.Redis) -> str:
    """host:port for messages, never the password."""
    kwargs = client.connection_pool.connection_kwargs
    return f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}"


@contextlib.contextmanager
def translated(
    where: str, error: Callable[[str], Exception] = SharedStateUnavailable
) -> Iterator[None]:
    """Raise ``error("Redis at host:port: Kind: detail")`` for any Redis error inside."""
    try:
        yield
    except redis.RedisError as exc:
        raise error(f"Redis at {where}: {type(exc).__name__}: {exc}") from exc


def translating(method: Callable[..., T]) -> Callable[..., T]:
    """``translated`` around a store's method (the store keeps ``location(client)`` as
    ``self._where``)."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> T:
        with translated(self._where):
            return method(self, *args, **kwargs)

    return wrapper
