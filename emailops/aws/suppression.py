"""The suppression list (``SUPPRESSION_TABLE``): addresses the consumer must not send to.

The table is shared with the Go service and has its shape: key ``Email`` (S), ``Reason``
(``bounce`` | ``complaint``, and ours ``manual`` | ``unsubscribe``), ``CreatedAt`` (RFC 3339 text),
written by PutItem so re-suppressing refreshes the row. Our ``Detail`` (plain words) and ``Source``
(the SES event / message id) are extra attributes the Go service ignores.

Spellings. The Go service looks an address up exactly (``GetItem(Email=<recipient as the producer
wrote it>)``) and its bounce handler writes the address exactly as SES reported it; we look up
case-insensitively (``address_key``). Both hold when every write puts one row per spelling: the
address as given (SES's report, what an operator typed), its ``address_key``, and on a bounce or
complaint the producer's spelling from the journal row the event names (``also``); and every lookup
tries the exact spelling first (a Go row), then the ``address_key`` (our row for any spelling of the
same mailbox). A removal deletes every spelling whose ``address_key`` matches (a Scan of the keys:
the console's, rare), so no stray spelling keeps suppressing for the Go service.

Removals are audited in the console's database (``SuppressionRemoval``, keyed by ``address_key``),
never in the table: any item under an ``Email`` suppresses it for the Go service, so a tombstone
there would be a suppression.

Old tables (key ``Address``, lowercased; ``Reason`` ``BOUNCE``; ``CreatedAt`` a Number) stay
usable: the key schema is learned once, lazily, on the first call (a probe ``GetItem``, no extra IAM
action), and such a table is read and written in its own shape until the operator copies it
(``manage.py migrate_suppression_table``) and switches ``SUPPRESSION_TABLE``. ``bootstrap_aws``
names the command.

With ``SES_ACCOUNT_SUPPRESSION_SYNC`` additions and removals are mirrored to SES's account-level
suppression list. The table stays the source of truth: a failed mirror is logged, not raised.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws.clients import error_code, translate_error
from emailops.aws.dynamo import table_call, text_attribute
from emailops.core.contract import address_key
from emailops.core.events import EventLog
from emailops.core.journal_words import suppression_words

__all__ = [
    "EMAIL_KEY",
    "OLD_KEY",
    "REASONS",
    "DynamoSuppressionList",
    "SesAccountSuppression",
    "Suppression",
    "created_at_epoch",
    "new_shape_item",
    "rfc3339",
]

logger = logging.getLogger("emailops.aws.suppression")

REASONS = ("bounce", "complaint", "manual", "unsubscribe")
EMAIL_KEY = "Email"  # the Go service's key, and ours
OLD_KEY = "Address"  # our key before the shared shape
_PROBE = " key-schema probe"  # never an address (a leading space): a GetItem that finds nothing


def rfc3339(epoch: int) -> str:
    return datetime.fromtimestamp(int(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def created_at_epoch(item: dict[str, Any]) -> int:
    """``CreatedAt`` as epoch seconds: RFC 3339 text (the shared shape) or a Number (old rows)."""
    value = item.get("CreatedAt", {})
    if "N" in value:
        return int(float(value["N"]))
    try:
        return int(datetime.fromisoformat(value.get("S", "").replace("Z", "+00:00")).timestamp())
    except ValueError:
        return 0


@dataclass(frozen=True)
class Suppression:
    address: str  # the row's key as stored: a reported spelling or an address_key
    reason: str  # "bounce" | "complaint" | "manual" | "unsubscribe" (old rows' BOUNCE… lowered)
    detail: str  # plain words, e.g. "Permanent/General: 550 5.1.1 user unknown"
    source: str  # the SES event id / SES message id that caused it ("" for manual or Go rows)
    created_at: int  # epoch seconds

    @property
    def in_words(self) -> str:
        return suppression_words(self.reason, self.detail)


def _from_item(item: dict[str, Any]) -> Suppression:
    return Suppression(
        address=text_attribute(item, EMAIL_KEY) or text_attribute(item, OLD_KEY),
        reason=text_attribute(item, "Reason").lower(),
        detail=text_attribute(item, "Detail"),
        source=text_attribute(item, "Source"),
        created_at=created_at_epoch(item),
    )


def new_shape_item(email: str, *, reason: str, detail: str, source: str, now: int) -> dict:
    """A row of the shared shape (also the migration's target)."""
    item = {
        EMAIL_KEY: {"S": email},
        "Reason": {"S": reason.lower()},
        "CreatedAt": {"S": rfc3339(now)},
    }
    if detail:
        item["Detail"] = {"S": detail}
    if source:
        item["Source"] = {"S": source}
    return item


def _old_shape_item(key: str, *, reason: str, detail: str, source: str, now: int) -> dict:
    return {
        OLD_KEY: {"S": key},
        "Reason": {"S": reason.upper()},
        "Detail": {"S": detail},
        "Source": {"S": source},
        "CreatedAt": {"N": str(int(now))},
    }


def _spellings(address: str) -> list[str]:
    """The exact spelling (stripped), then the address_key, once each."""
    exact = address.strip()
    key = address_key(address)
    return [s for s in dict.fromkeys((exact, key)) if s]


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
        # SES knows only BOUNCE and COMPLAINT; any other suppression is kept there as a bounce.
        self.client.put_suppressed_destination(
            EmailAddress=address, Reason="COMPLAINT" if reason.lower() == "complaint" else "BOUNCE"
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
        self._key: str | None = None  # the table's key attribute, learned on first use
        self._key_lock = threading.Lock()

    @property
    def key_name(self) -> str:
        """``Email`` (the shared shape) or ``Address`` (a table not migrated yet)."""
        if self._key is None:
            with self._key_lock:
                if self._key is None:
                    self._key = self._probe_key()
        return self._key

    def _probe_key(self) -> str:
        try:
            self.client.get_item(TableName=self.table, Key={EMAIL_KEY: {"S": _PROBE}})
        except ClientError as exc:
            if error_code(exc) != "ValidationException":
                raise translate_error(exc, "read suppression", key=_PROBE) from exc
            EventLog(logger).warning(
                "suppression.old_table_shape",
                table=self.table,
                detail="key Address: run manage.py migrate_suppression_table",
            )
            return OLD_KEY
        except BotoCoreError as exc:
            raise translate_error(exc, "read suppression", key=_PROBE) from exc
        return EMAIL_KEY

    @property
    def old_shape(self) -> bool:
        return self.key_name == OLD_KEY

    def suppression_reason(self, address: str) -> str | None:
        found = self.get(address)
        return found.in_words if found else None

    def get(self, address: str) -> Suppression | None:
        """The exact spelling first (the Go service's lookup), then the address_key."""
        spellings = [address_key(address)] if self.old_shape else _spellings(address)
        for spelling in spellings:
            item = self._get(spelling)
            if item:
                return _from_item(item)
        return None

    def _get(self, spelling: str) -> dict[str, Any] | None:
        answer = table_call(
            self.client,
            self.table,
            "get_item",
            "read suppression",
            spelling,
            Key={self.key_name: {"S": spelling}},
            ConsistentRead=True,
        )
        return answer.get("Item") or None

    def add(
        self,
        address: str,
        *,
        reason: str,
        detail: str,
        source: str,
        now: int,
        also: tuple[str, ...] = (),
    ) -> bool:
        """Suppress ``address`` (PutItem: a row that exists is refreshed, as the Go service does);
        False when it was suppressed already. ``also``: other spellings of the same mailbox to
        write (the producer's, from the journal row), so the Go service's exact lookup finds it
        whichever spelling SES reported; a spelling of another mailbox is ignored."""
        reason = reason.lower()
        if reason not in REASONS:
            raise ValueError(f"reason must be one of {', '.join(REASONS)}, not {reason!r}")
        key = address_key(address)
        if self.old_shape:
            rows = [_old_shape_item(key, reason=reason, detail=detail, source=source, now=now)]
        else:
            spellings = [*_spellings(address), *(a.strip() for a in also if address_key(a) == key)]
            rows = [
                new_shape_item(s, reason=reason, detail=detail, source=source, now=now)
                for s in dict.fromkeys(spellings)
                if s
            ]
        existed = False
        for item in rows:
            old = table_call(
                self.client,
                self.table,
                "put_item",
                "add suppression",
                key,
                Item=item,
                ReturnValues="ALL_OLD",
            ).get("Attributes")
            existed = existed or bool(old)
        if not existed:
            self._mirror("add", key, reason)
        return not existed

    def remove(self, address: str) -> Suppression | None:
        """Lift the suppression, every spelling of it; returns what was removed (the address_key's
        row when there was one), or None when there was none."""
        key = address_key(address)
        if self.old_shape:
            spellings = [key]
        else:
            spellings = list(dict.fromkeys([*_spellings(address), *self._spellings_of(key)]))
        removed: list[Suppression] = []
        for spelling in spellings:
            old = table_call(
                self.client,
                self.table,
                "delete_item",
                "remove suppression",
                spelling,
                Key={self.key_name: {"S": spelling}},
                ReturnValues="ALL_OLD",
            ).get("Attributes")
            if old:
                removed.append(_from_item(old))
        # Mirrored even when our table had no row: SES may hold one from before the sync.
        self._mirror("remove", key, "")
        removed.sort(key=lambda s: s.address != key)  # ours first: it has our detail
        return removed[0] if removed else None

    def _spellings_of(self, key: str) -> Iterator[str]:
        return (stored for stored in self._keys() if address_key(stored) == key)

    def _keys(self) -> Iterator[str]:
        name = self.key_name
        kwargs: dict[str, Any] = {
            "ProjectionExpression": "#k",
            "ExpressionAttributeNames": {"#k": name},
        }
        while True:
            page = table_call(
                self.client, self.table, "scan", "read suppressed addresses", "*", **kwargs
            )
            for item in page.get("Items", []):
                yield item[name]["S"]
            last = page.get("LastEvaluatedKey")
            if not last:
                return
            kwargs["ExclusiveStartKey"] = last

    def addresses(self) -> Iterator[str]:
        """Every suppressed address as ``address_key`` spells it: a Scan of the key alone (the
        suppression index's rebuild)."""
        return (address_key(stored) for stored in self._keys())

    def search(
        self, *, prefix: str = "", cursor: str | None = None, limit: int = 50
    ) -> tuple[list[Suppression], str | None]:
        """Entries whose address starts with ``prefix`` (as typed, or lowercased), ``limit`` per
        page. A Scan (the key is the address alone, and the list stays small next to the journal);
        pages follow the table's order, not the alphabet. The cursor is the last address returned.
        """
        limit = max(1, limit)
        name = self.key_name
        kwargs: dict[str, Any] = {}
        if prefix:
            kwargs["FilterExpression"] = "begins_with(#k, :p) OR begins_with(#k, :q)"
            kwargs["ExpressionAttributeNames"] = {"#k": name}
            kwargs["ExpressionAttributeValues"] = {
                ":p": {"S": prefix.strip().lower()},
                ":q": {"S": prefix.strip()},
            }
        start = _decode_cursor(cursor) if cursor else None
        found: list[Suppression] = []
        while True:
            if start:
                kwargs["ExclusiveStartKey"] = {name: {"S": start}}
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
            start = last[name]["S"]

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
