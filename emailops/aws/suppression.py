"""The suppression list (``SUPPRESSION_TABLE``): addresses the consumer must not send to.

One row per address as ``address_key`` spells it (lowercased, needless quotes removed; key
``Address``) with ``Reason`` (BOUNCE | COMPLAINT | MANUAL), a
``Detail`` in plain words, the ``Source`` event and ``CreatedAt`` (epoch seconds). Hard bounces and
complaints add rows (``emailops.aws.delivery``); Support leads remove them from the console.

With ``SES_ACCOUNT_SUPPRESSION_SYNC`` additions and removals are mirrored to SES's account-level
suppression list. The table stays the source of truth: a failed mirror is logged, not raised.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws.clients import error_code, translate_error
from emailops.aws.dynamo import (
    conditional_call,
    get_item,
    number_attribute,
    table_call,
    text_attribute,
)
from emailops.core.contract import address_key
from emailops.core.events import EventLog
from emailops.core.journal_words import suppression_words

__all__ = ["REASONS", "DynamoSuppressionList", "SesAccountSuppression", "Suppression"]

logger = logging.getLogger("emailops.aws.suppression")

REASONS = ("BOUNCE", "COMPLAINT", "MANUAL")


@dataclass(frozen=True)
class Suppression:
    address: str  # lowercased; the table's key attribute is "Address"
    reason: str  # "BOUNCE" | "COMPLAINT" | "MANUAL"
    detail: str  # plain words, e.g. "Permanent/General: 550 5.1.1 user unknown"
    source: str  # the SES event id / SES message id that caused it ("" for manual)
    created_at: int  # epoch seconds

    @property
    def in_words(self) -> str:
        return suppression_words(self.reason, self.detail)


def _from_item(item: dict[str, Any]) -> Suppression:
    return Suppression(
        address=text_attribute(item, "Address"),
        reason=text_attribute(item, "Reason"),
        detail=text_attribute(item, "Detail"),
        source=text_attribute(item, "Source"),
        created_at=number_attribute(item, "CreatedAt"),
    )


def _encode_cursor(address: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"a": address}).encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> str:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        return str(json.loads(base64.urlsafe_b64decode(padded))["a"])
    except (ValueError, KeyError, TypeError):
        raise ValueError("not a suppression-list cursor") from None


class SesAccountSuppression:
    """SES's account-level suppression list (sesv2), the optional mirror of the table."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def add(self, address: str, reason: str) -> None:
        # SES knows only BOUNCE and COMPLAINT; a manual suppression is kept there as a bounce.
        self.client.put_suppressed_destination(
            EmailAddress=address, Reason="COMPLAINT" if reason == "COMPLAINT" else "BOUNCE"
        )

    def remove(self, address: str) -> None:
        try:
            self.client.delete_suppressed_destination(EmailAddress=address)
        except ClientError as exc:
            if error_code(exc) != "NotFoundException":
                raise


class DynamoSuppressionList:
    """Implements the core's SuppressionList; the console's reads and removals use it too."""

    def __init__(
        self, client: Any, table: str, *, account_sync: SesAccountSuppression | None = None
    ) -> None:
        self.client = client
        self.table = table
        self.account_sync = account_sync

    def suppression_reason(self, address: str) -> str | None:
        found = self.get(address)
        return found.in_words if found else None

    def get(self, address: str) -> Suppression | None:
        key = address_key(address)
        item = get_item(self.client, self.table, "Address", key, what="read suppression")
        return _from_item(item) if item else None

    def add(self, address: str, *, reason: str, detail: str, source: str, now: int) -> bool:
        """Suppress ``address``; False (and the first entry kept) when it already is."""
        if reason not in REASONS:
            raise ValueError(f"reason must be one of {', '.join(REASONS)}, not {reason!r}")
        key = address_key(address)
        item = {
            "Address": {"S": key},
            "Reason": {"S": reason},
            "Detail": {"S": detail},
            "Source": {"S": source},
            "CreatedAt": {"N": str(int(now))},
        }
        written = conditional_call(
            self.client,
            self.table,
            "put_item",
            "add suppression",
            key,
            Item=item,
            ConditionExpression="attribute_not_exists(Address)",
        )
        if isinstance(written, ClientError):
            return False
        self._mirror("add", key, reason)
        return True

    def remove(self, address: str) -> Suppression | None:
        """Lift the suppression; returns what was removed, or None when there was none."""
        key = address_key(address)
        old = table_call(
            self.client,
            self.table,
            "delete_item",
            "remove suppression",
            key,
            Key={"Address": {"S": key}},
            ReturnValues="ALL_OLD",
        ).get("Attributes")
        # Mirrored even when our table had no row: SES may hold one from before the sync.
        self._mirror("remove", key, "")
        return _from_item(old) if old else None

    def addresses(self) -> Iterator[str]:
        """Every suppressed address: a Scan of the key alone (the suppression index's rebuild)."""
        kwargs: dict[str, Any] = {"ProjectionExpression": "Address"}
        while True:
            page = table_call(
                self.client, self.table, "scan", "read suppressed addresses", "*", **kwargs
            )
            for item in page.get("Items", []):
                yield item["Address"]["S"]
            last = page.get("LastEvaluatedKey")
            if not last:
                return
            kwargs["ExclusiveStartKey"] = last

    def search(
        self, *, prefix: str = "", cursor: str | None = None, limit: int = 50
    ) -> tuple[list[Suppression], str | None]:
        """Entries whose address starts with ``prefix`` (case-insensitive), ``limit`` per page.

        A Scan (the key is the address alone, and the list stays small next to the journal); pages
        follow the table's order, not the alphabet. The cursor is the last address returned.
        """
        limit = max(1, limit)
        kwargs: dict[str, Any] = {}
        if prefix:
            kwargs["FilterExpression"] = "begins_with(Address, :p)"
            kwargs["ExpressionAttributeValues"] = {":p": {"S": prefix.strip().lower()}}
        start = _decode_cursor(cursor) if cursor else None
        found: list[Suppression] = []
        while True:
            if start:
                kwargs["ExclusiveStartKey"] = {"Address": {"S": start}}
            page = table_call(
                self.client,
                self.table,
                "scan",
                "search suppressions",
                prefix or "*",
                Limit=limit,
                **kwargs,
            )
            for item in page.get("Items", []):
                found.append(_from_item(item))
                if len(found) == limit:
                    return found, _encode_cursor(found[-1].address)
            last = page.get("LastEvaluatedKey")
            if not last:
                return found, None
            start = last["Address"]["S"]

    def _mirror(self, action: str, address: str, reason: str) -> None:
        if self.account_sync is None:
            return
        try:
            if action == "add":
                self.account_sync.add(address, reason)
            else:
                self.account_sync.remove(address)
        except (ClientError, BotoCoreError) as exc:
            EventLog(logger).error(
                "suppression.account_sync_failed",
                action=action,
                address=address,
                error=translate_error(exc, f"{action} SES account suppression").describe(),
            )
