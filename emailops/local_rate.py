"""A send-rate limiter for one process only (tests, benchmarks with fakes): core's limiter with
per-process stores and real locks (core takes its locks injected, never ``threading`` itself)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from emailops.core.events import EventLog
from emailops.core.local_bucket import LocalBucketStore
from emailops.core.ratelimit import SharedRateLimiter

__all__ = ["local_rate_limiter"]


def local_rate_limiter(
    rate: float,
    *,
    log: EventLog | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    **kwargs: Any,
) -> SharedRateLimiter:
    """0 = no limit."""
    return SharedRateLimiter(
        max_rate=lambda: rate,
        store=LocalBucketStore(lock=threading.Lock(), clock=clock),
        fallback=LocalBucketStore(lock=threading.Lock(), clock=clock),
        log=log or EventLog(logging.getLogger("emailops.ratelimit")),
        lock=threading.Lock(),
        sleep=sleep,
        clock=clock,
        **kwargs,
    )
