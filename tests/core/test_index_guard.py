"""The tombstones through the shared index (``IndexedTombstones`` on ``IndexGuard``): no table read
for an address never erased, the table answering whenever the index cannot, an incomplete index
rebuilt from the table's hashes once."""

from __future__ import annotations

import logging

from emailops.core.erasure import IndexedTombstones, address_hash, erased_name
from tests.fakes import SetSuppressionIndex

KEY = b"k" * 32


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class DictTombstoneTable:
    def __init__(self, erased: dict[str, int] | None = None) -> None:
        self.rows = {address_hash(KEY, a): at for a, at in (erased or {}).items()}
        self.reads = 0
        self.scans = 0

    def hash(self, address: str) -> str:
        return address_hash(KEY, address)

    def name(self, address: str) -> str:
        return erased_name(KEY, address)

    def erased_at(self, address: str) -> int | None:
        self.reads += 1
        return self.rows.get(self.hash(address))

    def add(self, address: str, *, now: int) -> None:
        self.rows.setdefault(self.hash(address), now)

    def hashes(self):
        self.scans += 1
        return iter(list(self.rows))


def tombstones(table, index, clock=None) -> IndexedTombstones:
    return IndexedTombstones(table, index, clock=clock or Clock(), retry_seconds=5)


def built(table: DictTombstoneTable) -> SetSuppressionIndex:
    index = SetSuppressionIndex()
    index.rebuild(table.hashes)
    table.scans = 0
    return index


def test_an_address_never_erased_costs_no_table_read():
    table = DictTombstoneTable({"bob@example.com": 7})
    store = tombstones(table, built(table))
    assert store.erased_at("alice@example.com") is None
    assert table.reads == 0
    assert store.erased_at(" Bob@Example.com") == 7
    assert table.reads == 1


def test_an_incomplete_index_is_rebuilt_from_the_tables_hashes_once(caplog):
    table = DictTombstoneTable({"bob@example.com": 7})
    index = SetSuppressionIndex()  # never built (or evicted)
    store = tombstones(table, index)
    with caplog.at_level(logging.INFO, "emailops.erasure"):
        assert store.erased_at("bob@example.com") == 7
    assert (table.scans, table.reads) == (1, 1)  # this check: the table
    assert "tombstone.index_rebuilt" in caplog.text
    assert store.erased_at("alice@example.com") is None
    assert (table.scans, table.reads) == (1, 1)  # then the index


def test_while_the_index_is_down_the_table_answers_and_the_index_is_not_retried_at_once(caplog):
    table = DictTombstoneTable({"bob@example.com": 7})
    index = built(table)
    clock = Clock()
    store = tombstones(table, index, clock)
    index.down = True
    with caplog.at_level(logging.WARNING, "emailops.erasure"):
        assert store.erased_at("bob@example.com") == 7
        assert store.erased_at("alice@example.com") is None
    assert table.reads == 2
    assert "tombstone.index_unavailable" in caplog.text
    index.down = False
    lookups = index.lookups
    clock.now += 4.9
    store.erased_at("alice@example.com")
    assert index.lookups == lookups  # still skipped: no timeout paid per send
    clock.now += 0.2
    store.erased_at("alice@example.com")
    assert index.lookups == lookups + 1
    assert table.reads == 3


def test_an_erasure_reaches_the_index_and_survives_it_being_down(caplog):
    table = DictTombstoneTable()
    index = built(table)
    store = tombstones(table, index)
    store.add("bob@example.com", now=9)
    assert store.erased_at("bob@example.com") == 9
    index.down = True
    with caplog.at_level(logging.ERROR, "emailops.erasure"):
        store.add("carol@example.com", now=10)
    assert "tombstone.index_not_updated" in caplog.text
    assert table.rows[table.hash("carol@example.com")] == 10
