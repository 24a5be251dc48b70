"""Short-lived, thread-safe caches in front of the MappingStore and the TemplateStore.

The consumer asks for the same few mappings and templates over and over, and for most organizations
the branded lookup misses; caching hits and misses for ``seconds`` takes DynamoDB and S3 off the hot
path, at the price of an edit taking up to that long to reach the consumer. When a template's time
is up and the store can revalidate (an S3 conditional GET by ETag), an unchanged template is kept
without downloading it again. Errors are never cached.

Keys come from producers (any messageId, any organization's ``custom/O{org}/...``), so each cache
holds at most ``max_entries`` (1000 by default), hits and misses alike, and drops the
least recently used first: an evicted entry is only looked up again.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from emailops.core.ports import MappingStore, TemplateMapping, TemplateStore

__all__ = [
    "CachedMappingStore",
    "CachedStore",
    "CachedTemplateStore",
    "ExpiringEntries",
    "RevalidatingTemplateStore",
    "TemplateFetch",
]

V = TypeVar("V")
S = TypeVar("S")
DEFAULT_MAX_ENTRIES = 1000


@dataclass(frozen=True)
class TemplateFetch:
    """A template read that may be conditional: ``not_modified`` means "what you hold is current"."""

    source: str | None
    etag: str | None = None
    not_modified: bool = False
    # Which published version this is (the S3 VersionId, the console's id, or the ETag): what the
    # journal records as TemplateVersion.
    version: str = ""


class RevalidatingTemplateStore(TemplateStore, Protocol):
    def fetch_template(self, key: str, *, if_none_match: str | None = None) -> TemplateFetch:
        """Read ``key``; with ``if_none_match``, answer not_modified if its ETag still matches."""
        ...


@dataclass(frozen=True)
class _Entry(Generic[V]):
    expires: float
    value: V
    etag: str | None = None
    version: str = ""


class ExpiringEntries(Generic[V]):
    """A bounded LRU of expiring entries under a lock; lookups go to the store outside the lock,
    so one slow fetch never serializes the others."""

    def __init__(
        self,
        seconds: float,
        clock: Callable[[], float],
        max_entries: int,
        lock: AbstractContextManager,
    ) -> None:
        self.seconds, self.clock = seconds, clock
        self.max_entries = max(1, max_entries)
        self._entries: OrderedDict[Hashable, _Entry[V]] = OrderedDict()
        self._lock = lock

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> tuple[float, _Entry[V] | None]:
        now = self.clock()
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return now, entry

    def put(
        self, key: Hashable, now: float, value: V, etag: str | None = None, version: str = ""
    ) -> _Entry[V]:
        entry = _Entry(now + self.seconds, value, etag, version)
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return entry

    def forget(self, matches: Callable[[Hashable], bool]) -> None:
        """Drop every entry whose key ``matches`` (a write this process made)."""
        with self._lock:
            for key in [k for k in self._entries if matches(k)]:
                del self._entries[key]


class CachedStore(Generic[S, V]):
    """A store read through an expiring LRU of its answers (``V``) for ``seconds``."""

    def __init__(
        self,
        store: S,
        *,
        seconds: float,
        lock: AbstractContextManager,
        clock: Callable[[], float] = time.monotonic,
        max_entries: int = DEFAULT_MAX_ENTRIES,
    ) -> None:
        self.store = store
        self.seconds = seconds
        self._entries: ExpiringEntries[V] = ExpiringEntries(seconds, clock, max_entries, lock)

    def __len__(self) -> int:
        return len(self._entries)

    def _through(self, key: Hashable, read: Callable[[], V]) -> V:
        """The answer held for ``key``, or ``read()``'s, kept. The read runs outside the lock:
        one slow read holds no other."""
        now, entry = self._entries.get(key)
        if entry is not None and entry.expires > now:
            return entry.value
        return self._entries.put(key, now, read()).value


class CachedTemplateStore(CachedStore[TemplateStore, str | None]):
    def read_template(self, key: str) -> str | None:
        return self.fetch_template(key).source

    def fetch_template(self, key: str, *, if_none_match: str | None = None) -> TemplateFetch:
        """The cached template with its version (``if_none_match`` is ignored: the cache
        answers with what it holds)."""
        entry = self._lookup(key)
        return TemplateFetch(entry.value, entry.etag, version=entry.version)

    def _lookup(self, key: str) -> _Entry[str | None]:
        now, entry = self._entries.get(key)
        if entry is not None and entry.expires > now:
            return entry
        fetch = getattr(self.store, "fetch_template", None)
        if fetch is None:
            return self._entries.put(key, now, self.store.read_template(key))
        held = entry.etag if entry is not None else None
        result: TemplateFetch = fetch(key, if_none_match=held)
        if result.not_modified and entry is not None:
            return self._entries.put(key, now, entry.value, entry.etag, entry.version)
        return self._entries.put(key, now, result.source, result.etag, result.version)


class CachedMappingStore(CachedStore[MappingStore, TemplateMapping | None]):
    def get_mapping(self, message_id: str) -> TemplateMapping | None:
        return self._through(message_id, lambda: self.store.get_mapping(message_id))
