"""``SES_EVENTS_UNMATCHED_TABLE``: SES events that found no journal row (or of kinds we do not
know), kept with their raw JSON until TTL."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws.clients import translate_error
from emailops.aws.journal_codec import attribute_value as _av
from emailops.aws.journal_codec import item_from_dynamo
from emailops.core.delivery_events import DeliveryEvent

__all__ = ["DynamoUnmatchedEvents"]


class DynamoUnmatchedEvents:
    """``SES_EVENTS_UNMATCHED_TABLE``: events with no journal row, and events of unknown kinds,
    kept with their raw JSON until TTL (``ExpiresAt``). Keyed by the event's id, so a redelivered
    event overwrites itself."""

    _MAX_RAW = 300_000  # DynamoDB items hold 400 KB

    def __init__(self, client: Any, table: str, *, ttl_seconds: int) -> None:
        self.client = client
        self.table = table
        self.ttl_seconds = ttl_seconds

    def store(self, event: DeliveryEvent, *, reason: str, now: int) -> None:
        item = {
            "Id": event.event_id,
            "EventType": event.raw_type,
            "At": event.at,
            "SesMessageId": event.ses_message_id,
            "Recipients": list(event.recipients),
            "JournalKey": event.journal_key or "",
            "Reason": reason,
            "Summary": event.summary,
            "SnsMessageId": event.sns_message_id,
            "TopicArn": event.topic_arn,
            "Raw": json.dumps(event.raw, ensure_ascii=False)[: self._MAX_RAW],
            "ReceivedAt": now,
            "ExpiresAt": now + self.ttl_seconds,
        }
        try:
            self.client.put_item(
                TableName=self.table, Item={k: _av(v) for k, v in item.items() if v != ""}
            )
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc, "store unmatched event", key=event.event_id) from exc

    def get(self, event_id: str) -> dict[str, Any] | None:
        try:
            item = self.client.get_item(TableName=self.table, Key={"Id": {"S": event_id}})
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc, "read unmatched event", key=event_id) from exc
        return item_from_dynamo(item["Item"]) if "Item" in item else None
