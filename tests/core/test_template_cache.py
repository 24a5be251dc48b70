"""CachedTemplateStore: hits and misses are both cached for `seconds`, errors never are."""

from __future__ import annotations

import threading

import pytest

from emailops.core.errors import TransientError
from emailops.core.template_cache import CachedTemplateStore
from tests.fakes import DictTemplates


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store() -> DictTemplates:
    return DictTemplates({"default/a.html": "A"})


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def cached(store, clock) -> CachedTemplateStore:
    return CachedTemplateStore(store, seconds=60, clock=clock)


def test_a_hit_is_cached_until_it_expires(cached, store, clock):
    assert cached.read_template("default/a.html") == "A"
    store.templates["default/a.html"] = "A2"
    clock.now += 59.9
    assert cached.read_template("default/a.html") == "A"
    assert store.reads == ["default/a.html"]
    clock.now += 0.1  # exactly `seconds` later: expired
    assert cached.read_template("default/a.html") == "A2"
    assert store.reads == ["default/a.html"] * 2


def test_a_miss_is_cached_too(cached, store, clock):
    assert cached.read_template("custom/O1/a.html") is None
    assert cached.read_template("custom/O1/a.html") is None
    assert store.reads == ["custom/O1/a.html"]
    store.templates["custom/O1/a.html"] = "branded"
    assert cached.read_template("custom/O1/a.html") is None
    clock.now += 60
    assert cached.read_template("custom/O1/a.html") == "branded"


def test_keys_are_cached_separately(cached, store):
    store.templates["default/b.html"] = "B"
    assert cached.read_template("default/a.html") == "A"
    assert cached.read_template("default/b.html") == "B"
    assert cached.read_template("default/a.html") == "A"
    assert store.reads == ["default/a.html", "default/b.html"]


def test_errors_are_not_cached(cached, store):
    store.error = TransientError("fetch template", reason="503")
    with pytest.raises(TransientError):
        cached.read_template("default/a.html")
    store.error = None
    assert cached.read_template("default/a.html") == "A"


def test_zero_seconds_never_caches(store, clock):
    cached = CachedTemplateStore(store, seconds=0, clock=clock)
    cached.read_template("default/a.html")
    cached.read_template("default/a.html")
    assert len(store.reads) == 2


def test_concurrent_readers_all_get_the_template(cached, store):
    results: list[str | None] = []
    lock = threading.Lock()

    def read():
        for _ in range(50):
            value = cached.read_template("default/a.html")
            with lock:
                results.append(value)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == ["A"] * 400
    assert 1 <= len(store.reads) <= 8  # at most one fetch per thread before the entry exists
