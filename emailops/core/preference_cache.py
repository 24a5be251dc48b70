"""The consumer's short cache in front of the PreferenceStore, and the links' null object.

Every categorised send asks for its recipient's preference; the same few recipients come back
again and again (a digest to a team, a burst of activity on one dataset). Each answer, found or
not, is kept ``seconds`` (PREFERENCES_CACHE_SECONDS): a change made on the unsubscribe page or in
the console takes effect within that long in every consumer. Errors are never cached: the record
waits and is tried again, so a store that cannot answer neither sends to an unsubscribed person
nor drops the mail.

At most ``max_entries`` answers are held (recipients come from producers), the least recently
used dropped first. The lock is injected (core never imports threading): ``threading.Lock()`` in
the consumer, ``contextlib.nullcontext()`` where one thread reads.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager

from emailops.core.contract import address_key
from emailops.core.preferences import Preference, PreferenceStore
from emailops.core.template_cache import CachedStore

__all__ = ["CachedPreferenceStore", "NullUnsubscribeLinks"]

DEFAULT_MAX_ENTRIES = 10_000


class NullUnsubscribeLinks:
    """No unsubscribe links (no public base URL): no List-Unsubscribe header."""

    def url(self, *, address: str, category: str, organization: str | None) -> str | None:
        return None


class CachedPreferenceStore(CachedStore[PreferenceStore, Preference | None]):
    """``get`` read through an expiring LRU (the template cache's); writes go to the store and
    drop what the cache held for that address (this process sees its own change at once)."""

    def __init__(
        self,
        store: PreferenceStore,
        *,
        seconds: float,
        lock: AbstractContextManager,
        clock: Callable[[], float] = time.monotonic,
        max_entries: int = DEFAULT_MAX_ENTRIES,
    ) -> None:
        super().__init__(store, seconds=seconds, lock=lock, clock=clock, max_entries=max_entries)

    def get(self, address: str, category: str) -> Preference | None:
        if self.seconds <= 0:
            return self.store.get(address, category)
        key = (address_key(address), category)
        return self._through(key, lambda: self.store.get(address, category))

    def of_address(self, address: str) -> list[Preference]:
        return self.store.of_address(address)

    def set(self, preference: Preference) -> None:
        self.store.set(preference)
        self._forget(preference.address)

    def remove_address(self, address: str) -> int:
        removed = self.store.remove_address(address)
        self._forget(address)
        return removed

    def _forget(self, address: str) -> None:
        held = address_key(address)
        self._entries.forget(lambda key: key[0] == held)
