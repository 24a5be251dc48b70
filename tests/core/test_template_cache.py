"""CachedTemplateStore and CachedMappingStore: hits and misses are both cached for `seconds`, errors
never are; after that, a store that can revalidates templates by ETag instead of downloading them."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from emailops.core.errors import TransientError
from emailops.core.ports import TemplateMapping
from emailops.core.template_cache import CachedMappingStore, CachedTemplateStore
from tests.fakes import DictMappings, DictTemplates, EtagTemplates


class CountingMappings(DictMappings):
    def __init__(self, *mappings: TemplateMapping) -> None:
        super().__init__(*mappings)
        self.lookups: list[str] = []

    def get_mapping(self, message_id: str) -> TemplateMapping | None:
        self.lookups.append(message_id)
        return super().get_mapping(message_id)


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
    return CachedTemplateStore(store, seconds=60, lock=threading.Lock(), clock=clock)


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
    cached = CachedTemplateStore(store, seconds=0, lock=threading.Lock(), clock=clock)
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


# --- Revalidation by ETag (stores that offer conditional reads, as S3TemplateStore does) --------


@pytest.fixture
def s3_like() -> EtagTemplates:
    return EtagTemplates({"default/a.html": "A"})


@pytest.fixture
def revalidating(s3_like, clock) -> CachedTemplateStore:
    return CachedTemplateStore(s3_like, seconds=60, lock=threading.Lock(), clock=clock)


def test_an_unchanged_template_is_revalidated_not_downloaded(revalidating, s3_like, clock):
    assert revalidating.read_template("default/a.html") == "A"
    clock.now += 60
    assert revalidating.read_template("default/a.html") == "A"
    etag = EtagTemplates.etag("A")
    assert s3_like.fetches == [("default/a.html", None), ("default/a.html", etag)]
    clock.now += 59  # the revalidation started a new period
    assert revalidating.read_template("default/a.html") == "A"
    assert len(s3_like.fetches) == 2
    assert s3_like.reads == []  # never an unconditional read_template


def test_a_changed_template_is_fetched_on_revalidation(revalidating, s3_like, clock):
    revalidating.read_template("default/a.html")
    s3_like.templates["default/a.html"] = "A2"
    clock.now += 60
    assert revalidating.read_template("default/a.html") == "A2"
    clock.now += 60
    assert revalidating.read_template("default/a.html") == "A2"
    assert s3_like.fetches[-1] == ("default/a.html", EtagTemplates.etag("A2"))


def test_a_branded_miss_stays_cached_and_is_asked_again_without_an_etag(
    revalidating, s3_like, clock
):
    assert revalidating.read_template("custom/O1/a.html") is None
    assert revalidating.read_template("custom/O1/a.html") is None
    assert s3_like.fetches == [("custom/O1/a.html", None)]
    clock.now += 60
    s3_like.templates["custom/O1/a.html"] = "branded"
    assert revalidating.read_template("custom/O1/a.html") == "branded"
    assert s3_like.fetches[-1] == ("custom/O1/a.html", None)


def test_a_template_deleted_since_is_a_miss_after_revalidation(revalidating, s3_like, clock):
    revalidating.read_template("default/a.html")
    del s3_like.templates["default/a.html"]
    clock.now += 60
    assert revalidating.read_template("default/a.html") is None


def test_a_failed_revalidation_is_not_cached(revalidating, s3_like, clock):
    revalidating.read_template("default/a.html")
    clock.now += 60
    s3_like.error = TransientError("fetch template", reason="503")
    with pytest.raises(TransientError):
        revalidating.read_template("default/a.html")
    s3_like.error = None
    assert revalidating.read_template("default/a.html") == "A"
    assert s3_like.fetches[-1] == ("default/a.html", EtagTemplates.etag("A"))


# --- Mappings ------------------------------------------------------------------------------------

MAPPING = TemplateMapping(message_id="welcome", template_file="welcome.html", subject="Hi")


@pytest.fixture
def mappings() -> CountingMappings:
    return CountingMappings(MAPPING)


@pytest.fixture
def cached_mappings(mappings, clock) -> CachedMappingStore:
    return CachedMappingStore(mappings, seconds=60, lock=threading.Lock(), clock=clock)


def test_a_mapping_is_cached_until_it_expires(cached_mappings, mappings, clock):
    assert cached_mappings.get_mapping("welcome") == MAPPING
    mappings.rows["welcome"] = replace(MAPPING, subject="Hello")
    clock.now += 59.9
    assert cached_mappings.get_mapping("welcome").subject == "Hi"
    assert mappings.lookups == ["welcome"]
    clock.now += 0.1
    assert cached_mappings.get_mapping("welcome").subject == "Hello"
    assert mappings.lookups == ["welcome"] * 2


def test_an_unknown_message_id_is_cached_too(cached_mappings, mappings, clock):
    assert cached_mappings.get_mapping("nope") is None
    mappings.rows["nope"] = replace(MAPPING, message_id="nope")
    assert cached_mappings.get_mapping("nope") is None
    assert mappings.lookups == ["nope"]
    clock.now += 60
    assert cached_mappings.get_mapping("nope").message_id == "nope"


def test_mapping_errors_are_not_cached(cached_mappings, mappings):
    mappings.error = TransientError("look up template mapping", reason="503")
    with pytest.raises(TransientError):
        cached_mappings.get_mapping("welcome")
    mappings.error = None
    assert cached_mappings.get_mapping("welcome") == MAPPING


def test_the_version_travels_with_the_cached_template(revalidating, s3_like, clock):
    """The composer records the version it rendered: a cache hit and a 304 revalidation answer
    with the version of the bytes they hold, a changed file with its new version."""
    version = EtagTemplates.etag("A").strip('"')
    assert revalidating.fetch_template("default/a.html").version == version
    clock.now += 60  # revalidated: 304, the held version stays
    assert revalidating.fetch_template("default/a.html").version == version
    s3_like.templates["default/a.html"] = "A2"
    clock.now += 60
    fetched = revalidating.fetch_template("default/a.html")
    assert (fetched.source, fetched.version) == ("A2", EtagTemplates.etag("A2").strip('"'))


# --- bounded: keys are chosen by producers ----------------------------------------------------


def test_unknown_message_ids_from_producers_cannot_grow_the_mapping_cache_without_bound():
    mappings = CountingMappings(TemplateMapping("welcome", "w.html", "Hi"))
    cached = CachedMappingStore(
        mappings, seconds=60, lock=threading.Lock(), clock=Clock(), max_entries=100
    )
    cached.get_mapping("welcome")
    for i in range(5000):
        assert cached.get_mapping(f"unknown-{i}") is None  # negative entries, one per key
        if i % 50 == 0:
            cached.get_mapping("welcome")  # used often: stays (least recently used go first)
    assert len(cached) <= 100
    assert mappings.lookups.count("welcome") == 1
    # An evicted miss is simply looked up again.
    assert cached.get_mapping("unknown-0") is None and mappings.lookups.count("unknown-0") == 2


def test_custom_template_keys_cannot_grow_the_template_cache_without_bound(store):
    cached = CachedTemplateStore(
        store, seconds=60, lock=threading.Lock(), clock=Clock(), max_entries=10
    )
    for org in range(1000):
        assert cached.read_template(f"custom/O{org}/a.html") is None
    assert len(cached) <= 10
