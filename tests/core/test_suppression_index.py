"""The suppression check through the shared index: no table read on the steady path, changes seen by
every consumer at once, and the table answering whenever the index cannot."""

from __future__ import annotations

import logging

from emailops.core.suppression_index import IndexedSuppressionList
from tests.fakes import DictSuppressionTable, SetSuppressionIndex


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def built(table: DictSuppressionTable, **kwargs) -> SetSuppressionIndex:
    index = SetSuppressionIndex(**kwargs)
    index.rebuild(table.addresses)
    return index


def listing(table, index, clock=None) -> IndexedSuppressionList:
    return IndexedSuppressionList(table, index, clock=clock or Clock(), retry_seconds=5)


def test_an_address_not_suppressed_costs_no_table_read():
    table = DictSuppressionTable({"bob@example.com": "hard bounce: 550"})
    suppressions = listing(table, built(table))
    assert suppressions.suppression_reason("alice@example.com") is None
    assert table.reads == 0


def test_a_suppressed_address_reads_its_reason_from_the_table():
    table = DictSuppressionTable({"bob@example.com": "hard bounce: 550"})
    suppressions = listing(table, built(table))
    assert suppressions.suppression_reason(" Bob@Example.com") == "hard bounce: 550"
    assert table.reads == 1


def test_a_stale_index_entry_never_blocks_a_send_the_table_allows():
    table = DictSuppressionTable({"bob@example.com": "hard bounce: 550"})
    index = built(table)
    del table.rows["bob@example.com"]  # removed by a writer that could not reach the index
    assert listing(table, index).suppression_reason("bob@example.com") is None


def test_an_addition_is_seen_by_every_consumer_at_once():
    """Staleness across consumers: the writer updates the shared index after the table, so the
    next check anywhere (no cache between) sees it."""
    table = DictSuppressionTable()
    index = built(table)
    events_consumer, consumer = listing(table, index), listing(table, index)
    assert consumer.suppression_reason("bob@example.com") is None
    assert events_consumer.add(
        "Bob@example.com", reason="BOUNCE", detail="550", source="ses-1", now=1
    )
    assert consumer.suppression_reason("bob@example.com") == "bounce: 550"
    events_consumer.remove("bob@example.com")
    reads = table.reads
    assert consumer.suppression_reason("bob@example.com") is None
    assert table.reads == reads  # the removal reached the index too


def test_an_incomplete_index_is_rebuilt_from_the_table_once():
    table = DictSuppressionTable({"bob@example.com": "complaint: spam"})
    index = SetSuppressionIndex()  # never built (or evicted)
    suppressions = listing(table, index)
    assert suppressions.suppression_reason("bob@example.com") == "complaint: spam"
    assert (table.scans, table.reads) == (1, 1)  # this check: the table
    assert suppressions.suppression_reason("alice@example.com") is None
    assert (table.scans, table.reads) == (1, 1)  # then the index


def test_while_the_index_is_down_the_table_answers_and_the_index_is_not_retried_at_once(caplog):
    table = DictSuppressionTable({"bob@example.com": "hard bounce: 550"})
    index = built(table)
    clock = Clock()
    suppressions = listing(table, index, clock)
    index.down = True
    with caplog.at_level(logging.WARNING, "emailops.suppression_index"):
        assert suppressions.suppression_reason("bob@example.com") == "hard bounce: 550"
        assert suppressions.suppression_reason("alice@example.com") is None
    assert table.reads == 2
    assert "suppression.index_unavailable" in caplog.text
    index.down = False
    lookups = index.lookups
    clock.now += 4.9
    suppressions.suppression_reason("alice@example.com")
    assert index.lookups == lookups  # still skipped: no timeout paid per email
    clock.now += 0.2
    suppressions.suppression_reason("alice@example.com")
    assert index.lookups == lookups + 1
    assert table.reads == 3


def test_a_write_while_the_index_is_down_still_suppresses_via_the_table(caplog):
    table = DictSuppressionTable()
    index = built(table)
    index.down = True
    with caplog.at_level(logging.ERROR, "emailops.suppression_index"):
        assert listing(table, index).add(
            "bob@example.com", reason="BOUNCE", detail="550", source="s", now=1
        )
    assert "suppression.index_not_updated" in caplog.text
    assert table.rows == {"bob@example.com": "bounce: 550"}


def test_an_addition_already_in_the_table_heals_the_index():
    table = DictSuppressionTable({"bob@example.com": "bounce: 550"})
    index = SetSuppressionIndex(complete=True)  # missed the first writer
    suppressions = listing(table, index)
    assert not suppressions.add("bob@example.com", reason="BOUNCE", detail="x", source="s", now=1)
    assert suppressions.suppression_reason("bob@example.com") == "bounce: 550"


def test_the_table_is_asked_for_the_spelling_as_written():
    """A Go-written row is keyed by the address exactly as the producer wrote it: the index (which
    holds address keys) must hand the table that spelling, not the lowercased one."""

    class ExactTable(DictSuppressionTable):
        def suppression_reason(self, address: str) -> str | None:
            self.reads += 1
            return self.rows.get(address)

        def addresses(self):
            return iter(["bob@example.com"])

    table = ExactTable({"Bob@Example.COM": "bounce"})
    suppressions = listing(table, built(table))
    assert suppressions.suppression_reason("Bob@Example.COM") == "bounce"
