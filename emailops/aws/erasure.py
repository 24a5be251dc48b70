"""Erasure of one recipient's data from DynamoDB: its journal rows (found through the recipient
GSIs, never a Scan of the journal) and its unmatched delivery events.

Both row shapes are found as the journal search finds them (``journal_search.recipient_plan``):
``RecipientKeySentAtIndex`` on the lowercased address for rows this service wrote, and
``RecipientSentAtIndex`` on the address as given and lowercased for the Go consumer's rows (those
without RecipientKey). The unmatched-events table has no recipient index; it is small (events with
no journal row) and expires with the journal's TTL, so it is scanned with a filter.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws.clients import error_code, translate_error
from emailops.aws.journal_search import RECIPIENT_INDEX, RECIPIENT_KEY_INDEX
from emailops.core.contract import address_key
from emailops.core.errors import TransientError

__all__ = ["RecipientEraser", "RecipientRows"]

_BATCH = 25  # BatchWriteItem's limit
_UNPROCESSED_RETRIES = 8


@dataclass(frozen=True)
class RecipientRows:
    """The journal keys of one address, by shape."""

    rows: tuple[str, ...]  # written by this service (they carry RecipientKey)
    go_rows: tuple[str, ...]  # written by the Go consumer

    @property
    def all(self) -> tuple[str, ...]:
        return self.rows + self.go_rows


class RecipientEraser:
    def __init__(
        self,
        client: Any,
        *,
        journal_table: str,
        unmatched_table: str = "",
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.journal_table = journal_table
        self.unmatched_table = unmatched_table
        self.sleep = sleep

    def _pages(
        self, operation: str, params: dict[str, Any], what: str, *, missing_ok: bool = False
    ) -> Iterator[dict]:
        start: dict[str, Any] | None = None
        while True:
            call = params | ({"ExclusiveStartKey": start} if start else {})
            try:
                page = getattr(self.client, operation)(**call)
            except ClientError as exc:
                if missing_ok and error_code(exc) == "ResourceNotFoundException":
                    return
                raise translate_error(exc, what, key=params.get("IndexName")) from exc
            except BotoCoreError as exc:
                raise translate_error(exc, what, key=params.get("IndexName")) from exc
            yield from page.get("Items", [])
            start = page.get("LastEvaluatedKey")
            if not start:
                return

    def _query(self, index: str, attribute: str, value: str) -> Iterator[dict]:
        return self._pages(
            "query",
            {
                "TableName": self.journal_table,
                "IndexName": index,
                "KeyConditionExpression": "#h = :v",
                "ExpressionAttributeNames": {"#h": attribute, "#id": "Id", "#rk": "RecipientKey"},
                "ExpressionAttributeValues": {":v": {"S": value}},
                "ProjectionExpression": "#id, #rk",
            },
            "find journal rows of a recipient",
        )

    def journal_rows(self, address: str) -> RecipientRows:
        spellings = list(dict.fromkeys([address.lower(), address_key(address)]))
        rows = [
            item["Id"]["S"]
            for spelling in spellings
            for item in self._query(RECIPIENT_KEY_INDEX, "RecipientKey", spelling)
        ]
        go_rows: list[str] = []
        for value in dict.fromkeys([address, *spellings]):
            for item in self._query(RECIPIENT_INDEX, "Recipient", value):
                if "RecipientKey" not in item:  # the others were found above
                    go_rows.append(item["Id"]["S"])
        return RecipientRows(tuple(dict.fromkeys(rows)), tuple(dict.fromkeys(go_rows)))

    def unmatched_events(self, address: str) -> list[str]:
        """Ids of unmatched events naming ``address`` among their recipients, in any spelling
        (``address_key``: case, a display name, needless quotes)."""
        if not self.unmatched_table:
            return []
        wanted = address_key(address)
        found = []
        items = self._pages(
            "scan",
            {
                "TableName": self.unmatched_table,
                "ProjectionExpression": "#id, #r",
                "ExpressionAttributeNames": {"#id": "Id", "#r": "Recipients"},
            },
            "find unmatched events of a recipient",
            missing_ok=True,  # delivery events are optional: no table, nothing to erase
        )
        for item in items:
            recipients = item.get("Recipients", {}).get("L", [])
            if any(address_key(r.get("S", "")) == wanted for r in recipients):
                found.append(item["Id"]["S"])
        return found

    def delete(self, table: str, ids: list[str] | tuple[str, ...]) -> int:
        """Delete these rows (absent ones are no error); returns how many were asked for."""
        for start in range(0, len(ids), _BATCH):
            requests = [
                {"DeleteRequest": {"Key": {"Id": {"S": i}}}} for i in ids[start : start + _BATCH]
            ]
            pending: dict[str, Any] = {table: requests}
            for attempt in range(_UNPROCESSED_RETRIES + 1):
                try:
                    response = self.client.batch_write_item(RequestItems=pending)
                except (ClientError, BotoCoreError) as exc:
                    raise translate_error(exc, "delete rows", key=table) from exc
                pending = response.get("UnprocessedItems") or {}
                if not pending:
                    break
                self.sleep(min(2.0, 0.05 * 2**attempt))  # DynamoDB asks for a back-off
            else:
                left = len(pending.get(table, []))
                raise TransientError("delete rows", key=table, reason=f"{left} left unprocessed")
        return len(ids)
