"""Bounded Scans of the journal, for operations that have no index to query: stuck claims (the
table has no status index) and a bulk resend of one messageId across every recipient.

A Scan reads the whole table, so each call here reads at most ``max_read`` items (DynamoDB's
``Limit`` counts items read before the filter) and returns where it stopped; callers run them
rarely (Celery beat, hourly) or on a person's request, and report when the bound cut a pass short.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws.clients import translate_error
from emailops.aws.journal import sent_at_key
from emailops.aws.journal_codec import LEASE_ENDED, LEASE_NAMES, lease_values, row_from_dynamo
from emailops.core.journal_row import JournalRow
from emailops.core.lease import LeasePolicy

__all__ = ["JournalScan", "ScanPage"]

_PAGE = 1000  # items read per Scan call


@dataclass(frozen=True)
class ScanPage:
    rows: list[JournalRow]
    next_key: dict[str, Any] | None  # None: the pass reached the end of the table
    read: int  # items DynamoDB read (what the Scan cost)
    calls: int


class JournalScan:
    def __init__(self, client: Any, table: str) -> None:
        self.client = client
        self.table = table

    def _scan(
        self,
        *,
        filter_expression: str,
        names: dict[str, str],
        values: dict[str, Any],
        start_key: dict[str, Any] | None,
        max_read: int,
    ) -> ScanPage:
        rows: list[JournalRow] = []
        read = calls = 0
        key = start_key
        while read < max_read:
            params: dict[str, Any] = {
                "TableName": self.table,
                "FilterExpression": filter_expression,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
                "Limit": min(_PAGE, max_read - read),
            }
            if key:
                params["ExclusiveStartKey"] = key
            try:
                response = self.client.scan(**params)
            except (ClientError, BotoCoreError) as exc:
                raise translate_error(exc, "scan journal", key=self.table) from exc
            calls += 1
            read += int(response.get("ScannedCount", 0))
            rows += [row_from_dynamo(item) for item in response.get("Items", [])]
            key = response.get("LastEvaluatedKey")
            if not key:
                break
        return ScanPage(rows=rows, next_key=key, read=read, calls=calls)

    def stuck_claims(
        self,
        *,
        now: int,
        lease: LeasePolicy,
        start_key: dict[str, Any] | None = None,
        max_read: int = 20_000,
    ) -> ScanPage:
        """QUEUED rows whose claim lease has ended (``lease.stuck``, as a filter): its
        ClaimExpiresAt has passed, or, on a Go row, its Timestamp is before ``lease.stale_before``."""
        numbers = {
            f":{name}": {"N": str(value)} for name, value in lease_values(lease, now=now).items()
        }
        return self._scan(
            filter_expression=f"#status = :queued AND {LEASE_ENDED}",
            names={"#status": "Status", **LEASE_NAMES},
            values={":queued": {"S": "QUEUED"}, **numbers},
            start_key=start_key,
            max_read=max_read,
        )

    def rows_of_message(
        self,
        *,
        message_id: str,
        since: int,
        until: int,
        start_key: dict[str, Any] | None = None,
        max_read: int = 100_000,
    ) -> ScanPage:
        """Rows of ``message_id`` written between ``since`` and ``until`` (epoch seconds, inclusive)."""
        return self._scan(
            filter_expression="#m = :m AND #sk BETWEEN :from AND :to",
            names={"#m": "MessageId", "#sk": "SentAtKey"},
            values={
                ":m": {"S": message_id},
                ":from": {"S": sent_at_key(max(0, since))},
                ":to": {"S": sent_at_key(until)},
            },
            start_key=start_key,
            max_read=max_read,
        )

    def logged_only_rows(
        self,
        *,
        reason: str = "",
        start_key: dict[str, Any] | None = None,
        max_read: int = 20_000,
    ) -> ScanPage:
        """Log-only rows (``LoggedOnly`` true), of one ``reason`` when given (the console's list
        of what the send guard and the send controls kept from being sent)."""
        names = {"#lo": "LoggedOnly"}
        values: dict[str, Any] = {":yes": {"BOOL": True}}
        expression = "#lo = :yes"
        if reason:
            names["#lor"] = "LoggedOnlyReason"
            values[":r"] = {"S": reason}
            expression += " AND #lor = :r"
        return self._scan(
            filter_expression=expression,
            names=names,
            values=values,
            start_key=start_key,
            max_read=max_read,
        )
