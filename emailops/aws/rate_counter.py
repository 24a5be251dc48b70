"""``RATE_LIMIT_TABLE`` (``email-rate-counter``): the send guard's counts, shared with the Go consumer.

One item per ``Bucket`` (S, the partition key), TTL on ``ExpiresAt``:

- ``global#<window>`` and ``msg#<messageId>#<window>``: the Go consumer's rate counters,
  ``Count`` (N), written exactly as Go writes them.
- ``loop#<messageId>#<hash of the address>#<hour>``: ours, the loop detector: ``Copies`` (SS, hashes
  of the distinct dedupe keys, at most the limit) and ``Over`` (N, copies refused). Go never reads
  a bucket it did not name, so these are invisible to it.
- ``hold#<hash of the dedupe key>``: ours, a request the safeguard holds right now (for the
  console and the hold budget): ``MessageId``, ``HoldReason``, ``FirstHeldAt``, ``HeldUntil``,
  ``Holds``, and who it is for: ``RecipientHash`` (``send_guard.recipient_digest``, to find it
  by address) and ``RecipientMasked`` (``d***@example.com``, to show), never the address.
- ``heldfor#<recipient hash>``: ours, the hold buckets of one recipient (``Held``, SS), so that a
  search by address reads its holds with a GetItem each, never a Scan of the counters.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from emailops.aws.dynamo import conditional_call, get_item, table_call
from emailops.core.errors import EmailOpsError
from emailops.core.events import EventLog
from emailops.core.send_guard import HeldRecipient, LoopCount

__all__ = ["DynamoRateCounters", "HeldRequest"]

logger = logging.getLogger("emailops.aws.rate_counter")


class DynamoRateCounters:
    def __init__(self, client: Any, table: str) -> None:
        self.client = client
        self.table = table

    def increment(self, bucket: str, *, expires_at: int, by: int = 1) -> int:
        answer = table_call(
            self.client,
            self.table,
            "update_item",
            "count a send (rate safeguard)",
            bucket,
            Key={"Bucket": {"S": bucket}},
            UpdateExpression="ADD #c :one SET ExpiresAt = if_not_exists(ExpiresAt, :exp)",
            ExpressionAttributeNames={"#c": "Count"},
            ExpressionAttributeValues={":one": {"N": str(by)}, ":exp": {"N": str(expires_at)}},
            ReturnValues="UPDATED_NEW",
        )
        return int(answer["Attributes"]["Count"]["N"])

    def reserve(self, bucket: str, n: int, *, cap: int, expires_at: int) -> int:
        """Up to ``n`` sends of the window for this process (emailops.core.rate_allowance): one
        ``ADD n`` granted only while the count stays at most ``cap``; refused, the row's count
        (returned with the refusal) says how much room is left, and that much is asked for."""
        want = min(n, cap)
        for _ in range(4):  # the room shrinks as others take it: a few tries, then "full"
            if want <= 0:
                return 0
            answer = conditional_call(
                self.client,
                self.table,
                "update_item",
                "reserve sends (rate safeguard)",
                bucket,
                Key={"Bucket": {"S": bucket}},
                UpdateExpression="ADD #c :n SET ExpiresAt = if_not_exists(ExpiresAt, :exp)",
                ConditionExpression="attribute_not_exists(#c) OR #c <= :room",
                ExpressionAttributeNames={"#c": "Count"},
                ExpressionAttributeValues={
                    ":n": {"N": str(want)},
                    ":room": {"N": str(cap - want)},
                    ":exp": {"N": str(expires_at)},
                },
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
            if not isinstance(answer, ClientError):
                return want
            count = answer.response.get("Item", {}).get("Count", {}).get("N")
            want = min(n, cap - int(count)) if count is not None else want // 2
        return 0

    def note_copy(self, bucket: str, member: str, *, limit: int, expires_at: int) -> LoopCount:
        answer = conditional_call(
            self.client,
            self.table,
            "update_item",
            "count a copy (loop detector)",
            bucket,
            Key={"Bucket": {"S": bucket}},
            UpdateExpression="ADD #k :member SET ExpiresAt = if_not_exists(ExpiresAt, :exp)",
            ConditionExpression=(
                "attribute_not_exists(#k) OR contains(#k, :one) OR size(#k) < :limit"
            ),
            ExpressionAttributeNames={"#k": "Copies"},
            ExpressionAttributeValues={
                ":member": {"SS": [member]},
                ":one": {"S": member},
                ":limit": {"N": str(limit)},
                ":exp": {"N": str(expires_at)},
            },
        )
        if not isinstance(answer, ClientError):
            return LoopCount(within=True)
        over = table_call(
            self.client,
            self.table,
            "update_item",
            "count a copy over the limit (loop detector)",
            bucket,
            Key={"Bucket": {"S": bucket}},
            UpdateExpression="ADD #o :one",
            ExpressionAttributeNames={"#o": "Over"},
            ExpressionAttributeValues={":one": {"N": "1"}},
            ReturnValues="UPDATED_NEW",
        )
        return LoopCount(within=False, over=int(over["Attributes"]["Over"]["N"]))

    def note_hold(
        self,
        bucket: str,
        *,
        message_id: str,
        why: str,
        now: int,
        until: int,
        expires_at: int,
        recipient: HeldRecipient | None = None,
    ) -> int:
        who = ", RecipientHash = :rh, RecipientMasked = :rm" if recipient else ""
        names = (
            {":rh": {"S": recipient.digest}, ":rm": {"S": recipient.masked}} if recipient else {}
        )
        answer = table_call(
            self.client,
            self.table,
            "update_item",
            "record a held request (rate safeguard)",
            bucket,
            Key={"Bucket": {"S": bucket}},
            UpdateExpression=(
                "SET FirstHeldAt = if_not_exists(FirstHeldAt, :now), HeldUntil = :until, "
                f"MessageId = :m, HoldReason = :why, ExpiresAt = :exp{who} ADD Holds :one"
            ),
            ExpressionAttributeValues={
                ":now": {"N": str(now)},
                ":until": {"N": str(until)},
                ":m": {"S": message_id},
                ":why": {"S": why},
                ":exp": {"N": str(expires_at)},
                ":one": {"N": "1"},
                **names,
            },
            ReturnValues="ALL_NEW",
        )
        if recipient is not None:
            self._index_hold(bucket, recipient.digest, expires_at)
        return int(answer["Attributes"]["FirstHeldAt"]["N"])

    def _index_hold(self, bucket: str, digest: str, expires_at: int) -> None:
        """Name the hold under its recipient, for the console only: a failure here costs that
        search one window (the hold is renewed, and indexed again, when it comes back), never
        the hold's budget, so it is logged and not raised."""
        try:
            table_call(
                self.client,
                self.table,
                "update_item",
                "index a held request by recipient (rate safeguard)",
                bucket,
                Key={"Bucket": {"S": f"heldfor#{digest}"}},
                UpdateExpression="ADD Held :b SET ExpiresAt = :exp",
                ExpressionAttributeValues={":b": {"SS": [bucket]}, ":exp": {"N": str(expires_at)}},
            )
        except EmailOpsError as exc:
            EventLog(logger).warning("rate.hold_not_indexed", error=exc.describe())

    def forget_hold(self, bucket: str) -> None:
        table_call(
            self.client,
            self.table,
            "delete_item",
            "forget a held request",
            bucket,
            Key={"Bucket": {"S": bucket}},
        )

    def held(self, *, now: int, limit: int = 500) -> list[HeldRequest]:
        """Requests held right now (their hold has not ended more than a window ago), newest
        first. A Scan: the table holds only minutes of counters and the holds themselves."""
        rows: list[HeldRequest] = []
        kwargs: dict[str, Any] = {
            "FilterExpression": "begins_with(#b, :hold) AND HeldUntil >= :since",
            "ExpressionAttributeNames": {"#b": "Bucket"},
            "ExpressionAttributeValues": {":hold": {"S": "hold#"}, ":since": {"N": str(now - 60)}},
        }
        while len(rows) < limit:
            page = table_call(
                self.client, self.table, "scan", "list held requests", "hold#", **kwargs
            )
            rows += [HeldRequest.from_item(item) for item in page.get("Items", [])]
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        rows.sort(key=lambda row: row.first_held_at, reverse=True)
        return rows[:limit]

    def held_for(self, recipient_hash: str, *, now: int, limit: int = 20) -> list[HeldRequest]:
        """The requests held right now for one recipient (``send_guard.recipient_digest``),
        newest first: its ``heldfor#`` item, then each hold it names (GetItems, no Scan)."""
        what = "read the held requests of a recipient"
        index = get_item(self.client, self.table, "Bucket", f"heldfor#{recipient_hash}", what=what)
        buckets = sorted(index.get("Held", {}).get("SS", [])) if index else []
        rows = []
        for bucket in buckets[:limit]:
            item = get_item(self.client, self.table, "Bucket", bucket, what=what)
            if item and int(item.get("HeldUntil", {}).get("N", "0")) >= now - 60:
                rows.append(HeldRequest.from_item(item))
        rows.sort(key=lambda row: row.first_held_at, reverse=True)
        return rows


@dataclass(frozen=True)
class HeldRequest:
    """One held request as the console lists it (its address only masked; "" on a record
    written before the hold kept it)."""

    message_id: str
    reason: str
    first_held_at: int
    held_until: int
    holds: int
    recipient_masked: str = ""

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> HeldRequest:
        def number(name: str) -> int:
            return int(item.get(name, {}).get("N", "0"))

        return cls(
            message_id=item.get("MessageId", {}).get("S", ""),
            reason=item.get("HoldReason", {}).get("S", ""),
            first_held_at=number("FirstHeldAt"),
            held_until=number("HeldUntil"),
            holds=number("Holds"),
            recipient_masked=item.get("RecipientMasked", {}).get("S", ""),
        )
