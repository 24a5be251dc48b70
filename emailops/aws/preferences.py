"""The preferences table (``PREFERENCES_TABLE``): which categories an address unsubscribed from.

One item per (address, category): key ``Address`` (S, the address's ``address_key``, so every
spelling of a mailbox shares its preferences) and range key ``Category`` (S, the mapping's slug).
``Subscribed`` (BOOL), ``How`` (S, a ``HowChanged``), ``ChangedAt`` (N, epoch seconds) and
``Label`` (S, the category's label when it changed) are the preference now; ``History`` (L of maps
``{Subscribed, How, At}``) keeps its last ``HISTORY_LENGTH`` changes, oldest first, appended by
every ``set``. Written by emailops only (the public unsubscribe page, the console); read by the
consumer before a send (through a short cache) and by the console. The Go service never reads it.
"""

from __future__ import annotations

from typing import Any

from emailops.aws.dynamo import conditional_call, table_call, text_attribute
from emailops.core.contract import address_key
from emailops.core.preferences import Preference, PreferenceChange

__all__ = ["HISTORY_LENGTH", "DynamoPreferenceStore"]

HISTORY_LENGTH = 20  # changes kept per (address, category)


def _preference(item: dict[str, Any]) -> Preference:
    return Preference(
        address=text_attribute(item, "Address"),
        category=text_attribute(item, "Category"),
        subscribed=item.get("Subscribed", {}).get("BOOL") is not False,
        how=text_attribute(item, "How"),
        at=int(float(item.get("ChangedAt", {}).get("N", "0"))),
        label=text_attribute(item, "Label"),
    )


def _change(category: str, entry: dict[str, Any]) -> PreferenceChange:
    change = entry.get("M", {})
    return PreferenceChange(
        category=category,
        subscribed=change.get("Subscribed", {}).get("BOOL") is not False,
        how=change.get("How", {}).get("S", ""),
        at=int(float(change.get("At", {}).get("N", "0"))),
    )


class DynamoPreferenceStore:
    """Implements the core's PreferenceStore; ``history`` is the console's audit of changes."""

    def __init__(self, client: Any, table: str) -> None:
        self.client = client
        self.table = table

    def get(self, address: str, category: str) -> Preference | None:
        key = address_key(address)
        item = table_call(
            self.client,
            self.table,
            "get_item",
            "read preference",
            f"{key} {category}",
            Key={"Address": {"S": key}, "Category": {"S": category}},
            ConsistentRead=True,
        ).get("Item")
        return _preference(item) if item else None

    def of_address(self, address: str) -> list[Preference]:
        return [_preference(item) for item in self._items(address_key(address))]

    def history(self, address: str) -> list[PreferenceChange]:
        """Every category's kept changes of the address, newest first."""
        changes = [
            _change(text_attribute(item, "Category"), entry)
            for item in self._items(address_key(address), history=True)
            # newest first already: the sort keeps that order for changes of the same second
            for entry in reversed(item.get("History", {}).get("L", []))
        ]
        return sorted(changes, key=lambda c: (c.at, c.category), reverse=True)

    def set(self, preference: Preference) -> None:
        key = address_key(preference.address)
        where = f"{key} {preference.category}"
        change = {
            "M": {
                "Subscribed": {"BOOL": preference.subscribed},
                "How": {"S": preference.how},
                "At": {"N": str(int(preference.at))},
            }
        }
        values: dict[str, Any] = {
            ":subscribed": {"BOOL": preference.subscribed},
            ":how": {"S": preference.how},
            ":at": {"N": str(int(preference.at))},
            ":change": {"L": [change]},
            ":none": {"L": []},
        }
        sets = [
            "Subscribed = :subscribed",
            "How = :how",
            "ChangedAt = :at",
            "History = list_append(if_not_exists(History, :none), :change)",
        ]
        if preference.label:
            sets.append("Label = :label")
            values[":label"] = {"S": preference.label}
        expression = "SET " + ", ".join(sets) + ("" if preference.label else " REMOVE Label")
        item_key = {"Address": {"S": key}, "Category": {"S": preference.category}}
        answer = table_call(
            self.client,
            self.table,
            "update_item",
            "write preference",
            where,
            Key=item_key,
            UpdateExpression=expression,
            ExpressionAttributeValues=values,
            ReturnValues="UPDATED_NEW",
        )
        kept = len(answer.get("Attributes", {}).get("History", {}).get("L", []))
        if kept > HISTORY_LENGTH:
            self._trim(item_key, where, kept)

    def _trim(self, item_key: dict[str, Any], where: str, kept: int) -> None:
        """Drop the oldest changes beyond HISTORY_LENGTH; only if no other write appended
        meanwhile (then the next ``set`` trims)."""
        drop = ", ".join(f"History[{i}]" for i in range(kept - HISTORY_LENGTH))
        conditional_call(
            self.client,
            self.table,
            "update_item",
            "trim preference history",
            where,
            Key=item_key,
            UpdateExpression=f"REMOVE {drop}",
            ConditionExpression="size(History) = :kept",
            ExpressionAttributeValues={":kept": {"N": str(kept)}},
        )

    def remove_address(self, address: str) -> int:
        key = address_key(address)
        removed = 0
        for item in list(self._items(key, keys_only=True)):
            old = table_call(
                self.client,
                self.table,
                "delete_item",
                "remove preference",
                f"{key} {text_attribute(item, 'Category')}",
                Key={"Address": item["Address"], "Category": item["Category"]},
                ReturnValues="ALL_OLD",
            ).get("Attributes")
            removed += bool(old)
        return removed

    def _items(self, key: str, *, keys_only: bool = False, history: bool = False) -> list[dict]:
        """The address's items (one Query, paged): without History unless asked for."""
        names = ["Address", "Category"]
        if not keys_only:
            names += ["Subscribed", "How", "ChangedAt", "Label"] + (["History"] if history else [])
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": "#a = :a",
            "ExpressionAttributeValues": {":a": {"S": key}},
            "ProjectionExpression": ", ".join(f"#p{i}" for i in range(len(names))),
            "ExpressionAttributeNames": {"#a": "Address"}
            | {f"#p{i}": name for i, name in enumerate(names)},
            "ConsistentRead": True,
        }
        items: list[dict] = []
        while True:
            page = table_call(self.client, self.table, "query", "read preferences", key, **kwargs)
            items.extend(page.get("Items", []))
            last = page.get("LastEvaluatedKey")
            if not last:
                return items
            kwargs["ExclusiveStartKey"] = last
