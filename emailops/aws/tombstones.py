"""The erasure tombstones table (``ERASURE_TOMBSTONE_TABLE``): one item per erased address, keyed
by its keyed hash (``emailops.core.erasure.address_hash``), with ``ErasedAt``; never the address.
The Go service does not read it. A tombstone is never removed, so a found one is cached for the
process's life; an absent one is asked again (an erasure must be seen at once)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws.clients import error_code, translate_error
from emailops.core.erasure import address_hash, erased_name

__all__ = ["DynamoTombstones"]


class DynamoTombstones:
    def __init__(self, client: Any, table: str, *, key: bytes) -> None:
        self.client = client
        self.table = table
        self.key = key
        self._found: dict[str, int] = {}

    def hash(self, address: str) -> str:
        return address_hash(self.key, address)

    def name(self, address: str) -> str:
        return erased_name(self.key, address)

    def erased_at(self, address: str) -> int | None:
        digest = self.hash(address)
        if digest in self._found:
            return self._found[digest]
        try:
            item = self.client.get_item(
                TableName=self.table, Key={"Hash": {"S": digest}}, ConsistentRead=True
            ).get("Item")
        except ClientError as exc:
            if error_code(exc) == "ResourceNotFoundException":
                return None  # not provisioned yet: nothing was ever erased
            raise translate_error(exc, "read erasure tombstone", key=digest[:12]) from exc
        except BotoCoreError as exc:
            raise translate_error(exc, "read erasure tombstone", key=digest[:12]) from exc
        if not item:
            return None
        self._found[digest] = int(item["ErasedAt"]["N"])
        return self._found[digest]

    def hashes(self) -> Iterator[str]:
        start: dict[str, Any] | None = None
        while True:
            params: dict[str, Any] = {"TableName": self.table, "ProjectionExpression": "#h"}
            params["ExpressionAttributeNames"] = {"#h": "Hash"}
            try:
                page = self.client.scan(**params, **({"ExclusiveStartKey": start} if start else {}))
            except (ClientError, BotoCoreError) as exc:
                raise translate_error(exc, "read erasure tombstones", key=self.table) from exc
            yield from (item["Hash"]["S"] for item in page.get("Items", []))
            start = page.get("LastEvaluatedKey")
            if not start:
                return

    def add(self, address: str, *, now: int) -> None:
        digest = self.hash(address)
        try:
            self.client.put_item(
                TableName=self.table,
                Item={"Hash": {"S": digest}, "ErasedAt": {"N": str(now)}},
                ConditionExpression="attribute_not_exists(#h)",
                ExpressionAttributeNames={"#h": "Hash"},
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":  # erased before: kept
                raise translate_error(exc, "write erasure tombstone", key=digest[:12]) from exc
        except BotoCoreError as exc:
            raise translate_error(exc, "write erasure tombstone", key=digest[:12]) from exc
