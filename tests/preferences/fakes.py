"""In-memory stand-ins for the preference store and the unsubscribe rate limiter (until the
DynamoDB store lands, and so the page's tests need no Redis)."""

from __future__ import annotations

import hashlib
import threading
from collections import Counter

import pytest

from emailops import container
from emailops.container import Container
from emailops.core.contract import address_key
from emailops.core.preferences import Preference
from emailops.redis.token_rate import Decision


class MemoryPreferences:
    """The PreferenceStore port in a dict keyed by (address_key, category)."""

    def __init__(self, *preferences: Preference) -> None:
        self.items: dict[tuple[str, str], Preference] = {}
        self.lock = threading.Lock()  # the live server serves from its own thread
        for preference in preferences:
            self.set(preference)

    def get(self, address: str, category: str) -> Preference | None:
        return self.items.get((address_key(address), category))

    def of_address(self, address: str) -> list[Preference]:
        key = address_key(address)
        with self.lock:
            return [p for (a, _), p in self.items.items() if a == key]

    def set(self, preference: Preference) -> None:
        with self.lock:
            self.items[(address_key(preference.address), preference.category)] = preference

    def remove_address(self, address: str) -> int:
        key = address_key(address)
        with self.lock:
            gone = [k for k in self.items if k[0] == key]
            for k in gone:
                del self.items[k]
        return len(gone)


class CountingLimiter:
    """TokenRateLimiter's ``hit`` with one window that never ends (tests are shorter than one)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()

    def hit(self, token_key: str, *, per_minute: int, cost: int = 1) -> Decision:
        if per_minute <= 0:
            return Decision(True)
        with self.lock:
            if self.counts[token_key] + cost > per_minute:
                return Decision(False, retry_after=60)
            self.counts[token_key] += cost
        return Decision(True)

    def check(self, token_key: str, *, per_minute: int) -> Decision:
        if per_minute <= 0 or self.counts[token_key] < per_minute:
            return Decision(True)
        return Decision(False, retry_after=60)


class MemoryTombstones:
    """The erasure tombstones: addresses erased (``erased``), named as the real ones name them."""

    def __init__(self) -> None:
        self.erased: set[str] = set()

    def erased_at(self, address: str) -> int | None:
        return 1_764_000_000 if address_key(address) in self.erased else None

    def name(self, address: str) -> str:
        return f"erased:{hashlib.sha256(address_key(address).encode()).hexdigest()[:32]}"


def install_fakes(monkeypatch: pytest.MonkeyPatch, store: MemoryPreferences, limiter=None):
    """On the Container class, not one container's ``__dict__``: a changed setting (the key
    rotation tests) builds a new container, and it must see the same fakes."""
    monkeypatch.setattr(Container, "preference_store", store, raising=False)
    monkeypatch.setattr(
        Container, "unsubscribe_rate_limiter", limiter or CountingLimiter(), raising=False
    )
    monkeypatch.setattr(Container, "tombstones", MemoryTombstones(), raising=False)
    container.install(None)  # none kept from before, with its own adapters cached
    return store
