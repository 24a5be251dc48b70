"""A short-lived, thread-safe cache in front of a TemplateStore.

The consumer asks for the same few templates over and over, and for most organizations the branded
lookup misses; caching both hits and misses for a minute takes S3 off the hot path, at the price of a
template edit taking up to that long to reach the consumer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from emailops.core.ports import TemplateStore

__all__ = ["CachedTemplateStore"]


class CachedTemplateStore:
    def __init__(
        self, store: TemplateStore, *, seconds: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.store = store
        self.seconds = seconds
        self.clock = clock
        self._entries: dict[str, tuple[float, str | None]] = {}
        self._lock = threading.Lock()

    def read_template(self, key: str) -> str | None:
        now = self.clock()
        with self._lock:
            entry = self._entries.get(key)
        if entry is not None and entry[0] > now:
            return entry[1]
        source = self.store.read_template(key)  # outside the lock: S3 latency must not serialize
        with self._lock:
            self._entries[key] = (now + self.seconds, source)
        return source
