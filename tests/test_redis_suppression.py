"""The suppression index against the real Redis: built from the table, kept in step by writers, a
rebuild that a racing write cancels, and the table answering when Redis is unreachable."""

from __future__ import annotations

import os

import pytest

from emailops.core.suppression_index import (
    IndexedSuppressionList,
    IndexIncomplete,
    IndexUnavailable,
)
from emailops.redis.suppression import RedisSuppressionIndex
from tests.fakes import DictSuppressionTable
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


def test_consumers_see_an_addition_at_once_and_read_no_table_for_others(key):
    table = DictSuppressionTable()
    events_consumer = IndexedSuppressionList(
        table, RedisSuppressionIndex.from_url(REDIS_URL, key=key), clock=lambda: 0
    )
    consumer = IndexedSuppressionList(
        table, RedisSuppressionIndex.from_url(REDIS_URL, key=key), clock=lambda: 0
    )
    assert consumer.suppression_reason("bob@example.com") is None  # builds the index
    reads = table.reads
    events_consumer.add("bob@example.com", reason="BOUNCE", detail="550", source="s", now=1)
    assert consumer.suppression_reason("bob@example.com") == "bounce: 550"
    for i in range(20):
        assert consumer.suppression_reason(f"x{i}@example.com") is None
    assert table.reads == reads + 1  # only the suppressed address read the table


def test_redis_down_the_table_answers():
    down = RedisSuppressionIndex.from_url(f"redis://127.0.0.1:{free_port()}/0", key="k")
    with pytest.raises(IndexUnavailable):
        down.contains("bob@example.com")
    table = DictSuppressionTable({"bob@example.com": "hard bounce: 550"})
    suppressions = IndexedSuppressionList(table, down, clock=lambda: 0)
    assert suppressions.suppression_reason("bob@example.com") == "hard bounce: 550"
    assert suppressions.suppression_reason("alice@example.com") is None
    assert suppressions.add("carol@example.com", reason="BOUNCE", detail="x", source="s", now=1)
    assert suppressions.suppression_reason("carol@example.com") == "bounce: x"
