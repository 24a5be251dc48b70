"""No write of ours creates a journal row that holds only its Id: every update that must not
create a row says ``attribute_exists(Id)`` (a SIGTERM mid-record once left such a row)."""

from __future__ import annotations

import pytest

from emailops import container
from emailops.aws.journal_codec import row_from_item
from emailops.aws.journal_events import merged_update

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


def test_an_event_update_says_attribute_exists_even_on_a_row_with_events():
    from emailops.core.delivery_events import parse_event

    event = parse_event(
        {
            "eventType": "Delivery",
            "mail": {"messageId": "ses-1", "timestamp": "2026-01-01T00:00:00Z"},
            "delivery": {"timestamp": "2026-01-01T00:00:01Z", "recipients": ["a@example.com"]},
        },
        None,
    )
    row = row_from_item(
        {"Id": "k", "Status": "SENT", "SesMessageId": "ses-1", "DeliveryEventCount": 3}
    )
    update = merged_update(row, [event], now=NOW)
    assert "attribute_exists(Id)" in update["ConditionExpression"]
