"""The durable webhook outbox: a DynamoDB table (``<JOURNAL_TABLE>-webhook-outbox``) holding each
emitted event until a webhook worker has fanned it out.

An event is written in the same ``TransactWriteItems`` as the journal write that records its
fact (``write_with``): both land or neither does, so an event is durable exactly when its fact
is, and a write whose condition fails emits nothing. The item is keyed by the event's id (the same
for the same fact), so writing it twice is one item. The fan-out deletes it; a sweep fans out
what is still there a few seconds later (a lost wake-up). TTL (``ExpiresAt``, 7 days) bounds what
a stack with no webhook worker keeps.

Items: ``Id`` (the event id), ``Event`` (the event as JSON), ``JournalKey``, ``CreatedAt`` (epoch
seconds), ``ExpiresAt``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError

from emailops.aws.dynamo import table_call, transact_conditional
from emailops.core.webhooks import PendingEvent, WebhookEvent

__all__ = ["OUTBOX_SUFFIX", "OUTBOX_TTL_SECONDS", "DynamoWebhookOutbox", "outbox_table"]

OUTBOX_SUFFIX = "-webhook-outbox"
# Far beyond any outage a sweep outlives; what a stack without a webhook worker keeps, at most.
OUTBOX_TTL_SECONDS = 7 * 86400


def outbox_table(journal_table: str) -> str:
    """The outbox's table, named after the journal's (no setting of its own)."""
    return journal_table + OUTBOX_SUFFIX


class DynamoWebhookOutbox:
    def __init__(self, client: Any, table: str, *, ttl_seconds: int = OUTBOX_TTL_SECONDS) -> None:
        self.client = client
        self.table = table
        self.ttl_seconds = ttl_seconds

    def put_item(self, event: WebhookEvent, *, now: float) -> dict[str, Any]:
        """The transaction's Put of ``event`` (unconditional: the same event again is the same
        item, and must never cancel the fact's write)."""
        at = int(now)
        item = {
            "Id": {"S": event.id},
            "Event": {"S": json.dumps(event.to_dict(), ensure_ascii=False, sort_keys=True)},
            "JournalKey": {"S": event.journal_key},
            "CreatedAt": {"N": str(at)},
            "ExpiresAt": {"N": str(at + self.ttl_seconds)},
        }
        return {"Put": {"TableName": self.table, "Item": item}}

    def write_with(
        self,
        update: dict[str, Any],
        events: Sequence[WebhookEvent],
        *,
        now: float,
        what: str,
        key: str,
    ) -> dict[str, Any] | ClientError:
        """The fact's conditional ``update`` (a TransactWriteItems ``Update``: TableName, Key,
        expressions) and the events' items, in one transaction: the answer, or the
        ConditionalCheckFailed ClientError when the fact's condition failed (nothing written)."""
        items = [{"Update": update}] + [self.put_item(event, now=now) for event in events]
        return transact_conditional(self.client, items, what, key)

    def delete(self, event_id: str) -> None:
        table_call(
            self.client,
            self.table,
            "delete_item",
            "delete webhook outbox item",
            event_id,
            Key={"Id": {"S": event_id}},
        )

    def pending(self, *, created_before: float, limit: int) -> list[PendingEvent]:
        """Items written before ``created_before`` (epoch seconds), oldest first, at most
        ``limit``: what no wake-up fanned out. A Scan: the table holds only events not yet
        fanned out, so it is near empty whenever webhook workers run."""
        found: list[PendingEvent] = []
        kwargs: dict[str, Any] = {
            "FilterExpression": "CreatedAt < :before",
            "ExpressionAttributeValues": {":before": {"N": str(int(created_before))}},
            "ConsistentRead": True,
        }
        while len(found) < limit:
            page = table_call(
                self.client, self.table, "scan", "scan webhook outbox", self.table, **kwargs
            )
            for item in page.get("Items", []):
                event = WebhookEvent.from_dict(json.loads(item["Event"]["S"]))
                found.append(PendingEvent(event, created_at=float(item["CreatedAt"]["N"])))
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        found.sort(key=lambda pending: pending.created_at)
        return found[:limit]
