"""Erasure of one recipient's data from DynamoDB: its journal rows (found through the recipient
GSIs, never a Scan of the journal) and its unmatched delivery events.

A mailbox is what ``address_key`` says (the one normaliser: case, quotes that are not needed, a
display name). Its journal rows are looked up under each spelling they can be stored under
(``journal_plan.recipient_keys`` and ``go_recipients``): ``RecipientKeySentAtIndex`` on the
address_key, which every row this service writes carries, then on the lowercased spellings that
rows written before it carry; ``RecipientSentAtIndex`` for the Go consumer's rows (those without
RecipientKey), under the spellings told from the address and every spelling our own rows of the
mailbox were sent to (a producer spells an address the same way for both consumers). The
unmatched-events table has no recipient index; it is small (events with no journal row) and
expires with the journal's TTL, so it is scanned with a filter.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws.clients import error_code, translate_error
from emailops.aws.journal_plan import (
    RECIPIENT_INDEX,
    RECIPIENT_KEY_INDEX,
    go_recipients,
    recipient_keys,
)
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
                "ExpressionAttributeNames": {
                    "#h": attribute,
                    "#id": "Id",
                    "#r": "Recipient",
                    "#rk": "RecipientKey",
                },
                "ExpressionAttributeValues": {":v": {"S": value}},
                "ProjectionExpression": "#id, #r, #rk",
            },
            "find journal rows of a recipient",
        )

    def journal_rows(self, address: str) -> RecipientRows:
        """Every journal row of ``address``'s mailbox (see the module), by shape."""
        key = address_key(address)
        rows: dict[str, None] = {}
        sent_to: dict[str, None] = {}  # the spellings our rows of the mailbox were sent to
        asked = recipient_keys(address)
        for value in asked:
            for item in self._query(RECIPIENT_KEY_INDEX, "RecipientKey", value):
                recipient = item.get("Recipient", {}).get("S", "")
                if address_key(recipient) == key:  # always, for these keys: a guard all the same
                    rows[item["Id"]["S"]] = None
                    sent_to[recipient] = None
        # Rows written before RecipientKey was the address_key, under a spelling a newer row shows.
        for value in dict.fromkeys(s.lower() for s in sent_to):
            if value not in asked:
                for item in self._query(RECIPIENT_KEY_INDEX, "RecipientKey", value):
                    rows[item["Id"]["S"]] = None
        go_rows: dict[str, None] = {}
        for value in dict.fromkeys([*go_recipients(address), *sent_to]):
            for item in self._query(RECIPIENT_INDEX, "Recipient", value):
                if "RecipientKey" not in item:  # the others were found above
                    go_rows[item["Id"]["S"]] = None
        return RecipientRows(tuple(rows), tuple(go_rows))

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
