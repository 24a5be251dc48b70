"""No write of ours creates a journal row that holds only its Id: every update that must not
create a row says ``attribute_exists(Id)``, the events write included.

The row seen holding only its Id after a SIGTERM mid-record (moto's server) was written by none
of these: it was a claim's row read half-written. The claim (like ``record_failure`` and
``record_suppressed``) is the one update that must create its row, and does so with every
attribute in one UpdateItem; moto applied it as "store the key, then apply the expression" while
reads ran unlocked. The harness's moto now makes reads wait for the write in progress
(tests/support/moto_atomic.py); the stop test of tests/faults/test_leases_and_stop.py watches
for such rows on moto's server."""

from __future__ import annotations

import pytest

from emailops import container
from emailops.aws.journal_codec import row_from_item
from emailops.aws.journal_events import merged_update
from emailops.core.lease import LeasePolicy

TABLE = "email-journal"
NOW = 1_750_000_000


def _raw(aws, key: str) -> dict:
    return aws.dynamodb.get_item(TableName=TABLE, Key={"Id": {"S": key}}, ConsistentRead=True).get(
        "Item", {}
    )


WRITES = {
    "mark_sent": lambda j, k: j.mark_sent(k, attempt=1, provider_id="ses-1", sent_at=NOW),
    "mark_failed": lambda j, k: j.mark_failed(k, attempt=1, error="boom"),
    "mark_accepted": lambda j, k: j.mark_accepted(k, provider_id="ses-1", sent_at=NOW),
    "note_extra_send": lambda j, k: j.note_extra_send(k, attempt=1, provider_id="s", sent_at=NOW),
    "extend_claim": lambda j, k: j.extend_claim(k, attempt=1, until=NOW + 60),
    "release_claim": lambda j, k: j.release_claim(k, attempt=1),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_an_update_on_a_missing_row_creates_nothing(aws, write):
    journal = container.current().journal
    WRITES[write](journal, "absent")
    assert _raw(aws, "absent") == {}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_every_update_that_must_not_create_says_attribute_exists(aws, write):
    journal = container.current().journal
    seen = []
    real = journal.client.update_item

    def spy(**kwargs):
        seen.append(kwargs["ConditionExpression"])
        return real(**kwargs)

    journal.client.update_item = spy
    try:
        WRITES[write](journal, "absent")
    finally:
        journal.client.update_item = real
    assert seen and all("attribute_exists(#id)" in c for c in seen), seen


def _delivery_event():
    from emailops.core.delivery_events import parse_event

    return parse_event(
        {
            "eventType": "Delivery",
            "mail": {"messageId": "ses-1", "timestamp": "2026-01-01T00:00:00Z"},
            "delivery": {"timestamp": "2026-01-01T00:00:01Z", "recipients": ["a@example.com"]},
        },
        None,
    )


@pytest.mark.parametrize("events_before", [0, 3])
def test_an_event_on_a_row_gone_since_it_was_read_creates_nothing(aws, events_before):
    """The events write on a row read earlier (``read_rows``) that TTL or erasure removed since:
    GONE, and no row holding only the delivery attributes."""
    from emailops.core.delivery_handler import ApplyResult

    item = {"Id": "gone", "Status": "SENT", "SesMessageId": "ses-1"}
    if events_before:
        item["DeliveryEventCount"] = events_before
    read_earlier = row_from_item(item)

    results = container.current().event_journal.apply_events(
        "gone", [_delivery_event()], now=NOW, row=read_earlier
    )

    assert results == [ApplyResult.GONE]
    assert _raw(aws, "gone") == {}


def test_an_event_update_says_attribute_exists_even_on_a_row_with_events():
    event = _delivery_event()
    row = row_from_item(
        {"Id": "k", "Status": "SENT", "SesMessageId": "ses-1", "DeliveryEventCount": 3}
    )
    update = merged_update(row, [event], now=NOW, lease=LeasePolicy(60))
    assert "attribute_exists(Id)" in update["ConditionExpression"]


def test_a_reader_never_sees_a_claimed_row_holding_only_its_id(aws, monkeypatch):
    """The Id-only row seen after a SIGTERM mid-record (moto's server) was no write of ours: a
    claim (the one update that creates a row, with all its attributes) is applied by moto as
    "put the key alone, then apply the expression", and a Scan or GetItem running meanwhile read
    the key alone. DynamoDB applies an update atomically; the harness's moto must too, so reads
    wait for the write in progress (tests/support/moto_atomic.py)."""
    import threading

    from moto.dynamodb.models.table import Table

    from emailops.core.ports import Claim

    seen: list[dict] = []
    started = threading.Event()
    real_put = Table.put_item

    def read_meanwhile() -> None:
        started.set()
        seen.append(_raw(aws, "fresh"))

    def put_item(self, item_attrs, *args, **kwargs):
        stored = real_put(self, item_attrs, *args, **kwargs)
        if set(item_attrs) == {"Id"}:  # moto's first step of an update that creates the item
            reader = threading.Thread(target=read_meanwhile)
            reader.start()
            started.wait(timeout=5)
            reader.join(timeout=0.5)  # a reader left waiting is the atomic outcome
            readers.append(reader)
        return stored

    readers: list[threading.Thread] = []
    monkeypatch.setattr(Table, "put_item", put_item)
    claim = Claim(key="fresh", message_id="m", recipient="a@example.com", context={},
                  now=NOW, lease_seconds=60, ttl_seconds=86400)  # fmt: skip

    container.current().journal.claim(claim)
    for reader in readers:
        reader.join(timeout=5)

    assert readers, "moto no longer creates an item this way: this test can go"
    assert [set(item) for item in seen] and all("Status" in item for item in seen), seen
