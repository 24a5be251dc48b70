"""The Redis index (the erasure tombstones' set) against the real Redis: built from the table, kept
in step by writers, a rebuild that a racing write cancels, and an unreachable Redis an error, never
an answer."""

from __future__ import annotations

import os

import pytest

from emailops.core.suppression_index import IndexIncomplete, IndexUnavailable
from emailops.redis.suppression import RedisSuppressionIndex
from tests.support.stack import free_port

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
def key(redis_key):
    return redis_key + ":suppressed"


def test_an_unbuilt_index_never_answers_no(key):
    index = RedisSuppressionIndex.from_url(REDIS_URL, key=key)
    with pytest.raises(IndexIncomplete):
        index.contains("bob@example.com")
    index.added("bob@example.com")  # a writer's addition does not make it complete
    with pytest.raises(IndexIncomplete):
        index.contains("alice@example.com")


def test_a_rebuild_holds_the_table_and_writers_keep_it_in_step(key):
    index = RedisSuppressionIndex.from_url(REDIS_URL, key=key, max_age=60)
    assert index.rebuild(lambda: [f"a{i}@example.com" for i in range(2500)])
    assert index.contains("a2499@example.com")
    assert not index.contains("bob@example.com")
    index.added("bob@example.com")
    index.removed("a0@example.com")
    assert index.contains("bob@example.com")
    assert not index.contains("a0@example.com")
    assert 0 < index.client.ttl(key) <= 60  # the age bound


def test_a_write_during_a_rebuild_cancels_it(key):
    """The rebuild read the table before a removal landed: committing it would resurrect the
    address; a write that lands during the read bumps the epoch and the rebuild is dropped."""
    index = RedisSuppressionIndex.from_url(REDIS_URL, key=key)

    def table_read_racing_a_removal():
        yield "bob@example.com"
        index.removed("bob@example.com")  # the console removes it meanwhile
        yield "carol@example.com"

    assert not index.rebuild(table_read_racing_a_removal)
    with pytest.raises(IndexIncomplete):
        index.contains("bob@example.com")
    assert index.rebuild(lambda: ["carol@example.com"])  # the next try commits
    assert not index.contains("bob@example.com")


def test_one_rebuild_at_a_time(key):
    index = RedisSuppressionIndex.from_url(REDIS_URL, key=key)
    other = RedisSuppressionIndex.from_url(REDIS_URL, key=key)
    seen = []

    def read_table():
        seen.append(other.rebuild(lambda: pytest.fail("a second rebuild read the table")))
        yield "bob@example.com"

    assert index.rebuild(read_table)
    assert seen == [False]


def test_redis_down_is_unavailable_not_an_answer():
    down = RedisSuppressionIndex.from_url(f"redis://127.0.0.1:{free_port()}/0", key="k")
    with pytest.raises(IndexUnavailable):
        down.contains("bob@example.com")
