"""``STATS_TABLE``: the reputation counters, one item per (scope, hour), ADDed atomically.

Item: ``Scope`` (S) = ``account`` | ``message#<messageId>`` | ``org#<orgId>``, ``Hour`` (S) =
``YYYY-MM-DDTHH`` (UTC), one number per counter (``emailops.core.reputation.COUNTERS``) and
``ExpiresAt`` (TTL, 400 days by default). Reads are one Query per scope over an hour range: never
a Scan, of this table or of the journal.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws.clients import translate_error
from emailops.core.errors import EmailOpsError
from emailops.core.reputation import ACCOUNT, HourCounts, message_scope, org_scope

__all__ = ["BufferedStats", "DynamoStats"]


def _hour_epoch(hour: str) -> int:
    return int(datetime.strptime(hour, "%Y-%m-%dT%H").replace(tzinfo=UTC).timestamp())


def _scopes(message_id: str, organization: str | None) -> list[str]:
    """The account's scope, then the messageId's and the organization's (when there is one)."""
    return [ACCOUNT, message_scope(message_id)] + (
        [org_scope(organization)] if organization else []
    )


class DynamoStats:
    def __init__(self, client: Any, table: str, *, ttl_days: int = 400) -> None:
        self.client = client
        self.table = table
        self.ttl_seconds = ttl_days * 86400

    def add(
        self, *, message_id: str, organization: str | None, hour: str, counts: dict[str, int]
    ) -> None:
        """ADD ``counts`` to the account's, the messageId's and the organization's hour."""
        scopes = _scopes(message_id, organization)
        for scope in scopes:
            self.add_scope(scope=scope, hour=hour, counts=counts, others=scopes[1:])

    def flush(self) -> None:
        """Nothing is held: every add is written at once."""

    def add_scope(
        self, *, scope: str, hour: str, counts: dict[str, int], others: list[str] | tuple = ()
    ) -> None:
        """ADD ``counts`` to one scope's hour; the account's item also records ``others``, the
        hour's other scopes, so listing them needs no Scan."""
        counts = {name: int(n) for name, n in counts.items() if n}
        if not counts:
            return
        names = {f"#c{i}": name for i, name in enumerate(counts)}
        values = {f":c{i}": {"N": str(n)} for i, n in enumerate(counts.values())}
        values[":exp"] = {"N": str(_hour_epoch(hour) + self.ttl_seconds)}
        update = "ADD " + ", ".join(f"#c{i} :c{i}" for i in range(len(counts)))
        update += " SET ExpiresAt = :exp"
        extra_update, extra_values = "", {}
        if scope == ACCOUNT and others:
            extra_update = ", Scopes :scopes"
            extra_values = {":scopes": {"SS": sorted(others)}}
        try:
            self.client.update_item(
                TableName=self.table,
                Key={"Scope": {"S": scope}, "Hour": {"S": hour}},
                UpdateExpression=update.replace(" SET", extra_update + " SET", 1),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values | extra_values,
            )
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc, "add reputation counts", key=f"{scope}/{hour}") from exc

    def read(self, *, scope: str, since_hour: str, until_hour: str) -> list[HourCounts]:
        """The scope's hours from ``since_hour`` to ``until_hour`` inclusive, oldest first."""
        items = self._hours(scope, since_hour, until_hour, what="read reputation counts")
        return [_hour_counts(item) for item in items]

    def scopes(self, *, since_hour: str, until_hour: str) -> set[str]:
        """Every messageId and organization scope with counts in the range: the account's items
        list them (``Scopes``), so finding them is one Query, not a Scan."""
        items = self._hours(
            ACCOUNT,
            since_hour,
            until_hour,
            what="read reputation scopes",
            ProjectionExpression="Scopes",
        )
        return {scope for item in items for scope in item.get("Scopes", {}).get("SS", [])}

    def _hours(
        self, scope: str, since_hour: str, until_hour: str, *, what: str, **extra: Any
    ) -> list[dict[str, Any]]:
        """Every item of ``scope`` from ``since_hour`` to ``until_hour`` (one Query, all its
        pages), oldest first; ``extra`` goes into the Query as it is."""
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "#scope = :scope AND #hour BETWEEN :since AND :until",
            "ExpressionAttributeNames": {"#scope": "Scope", "#hour": "Hour"},
            "ExpressionAttributeValues": {
                ":scope": {"S": scope},
                ":since": {"S": since_hour},
                ":until": {"S": until_hour},
            },
            **extra,
        }
        items: list[dict[str, Any]] = []
        try:
            while True:
                page = self.client.query(**kwargs)
                items += page.get("Items", [])
                if "LastEvaluatedKey" not in page:
                    return items
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc, what, key=scope) from exc


def _hour_counts(item: dict[str, Any]) -> HourCounts:
    counts = {
        name: int(value["N"])
        for name, value in item.items()
        if "N" in value and name != "ExpiresAt"
    }
    return HourCounts(scope=item["Scope"]["S"], hour=item["Hour"]["S"], counts=counts)


class BufferedStats:
    """The counters summed in memory and written every ``flush_seconds`` (one ADD per scope and
    hour for however many emails), by one thread at a time: while one writes, the others' counts
    gather for the next write. A write that fails (a throttled table) keeps its counts for the
    next flush instead of losing them. The price of batching: a process killed between flushes
    loses that many seconds of counts; at 0, every email would cost an ADD per scope, more than
    its own journal writes.

    Counts still come only from journal writes that succeeded; this only delays adding them."""

    def __init__(
        self,
        stats: DynamoStats,
        *,
        flush_seconds: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        on_error: Callable[[EmailOpsError], None] | None = None,
    ) -> None:
        self.stats = stats
        self.flush_seconds = flush_seconds
        self.clock = clock
        self.on_error = on_error
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self._pending: dict[tuple[str, str], Counter] = {}
        self._others: dict[str, set[str]] = {}  # hour → the account's other scopes
        self._flushed_at = clock()

    def add(
        self, *, message_id: str, organization: str | None, hour: str, counts: dict[str, int]
    ) -> None:
        scopes = _scopes(message_id, organization)
        with self._lock:
            for scope in scopes:
                self._pending.setdefault((scope, hour), Counter()).update(counts)
            self._others.setdefault(hour, set()).update(scopes[1:])
            due = self.clock() - self._flushed_at >= self.flush_seconds
        if due:
            self.flush(wait=False)  # another thread writing already: ours go in its next write

    def flush(self, *, wait: bool = True) -> None:
        """Write what is pending; what fails stays pending. One flush at a time."""
        if not self._flushing.acquire(blocking=wait):
            return
        try:
            with self._lock:
                pending, self._pending = self._pending, {}
                others, self._others = self._others, {}
                self._flushed_at = self.clock()
            failed: dict[tuple[str, str], Counter] = {}
            items = list(pending.items())
            for i, ((scope, hour), counts) in enumerate(items):
                try:
                    self.stats.add_scope(
                        scope=scope,
                        hour=hour,
                        counts=dict(counts),
                        others=sorted(others.get(hour, ())),
                    )
                except EmailOpsError as exc:
                    # A throttled or unreachable table: keep this and the rest for the next flush
                    # rather than wait out every item's retries now.
                    failed.update(items[i:])
                    if self.on_error is not None:
                        self.on_error(exc)
                    break
            if failed:
                with self._lock:
                    for key, counts in failed.items():
                        self._pending.setdefault(key, Counter()).update(counts)
                    for scope, hour in failed:
                        if scope == ACCOUNT:
                            self._others.setdefault(hour, set()).update(others.get(hour, ()))
        finally:
            self._flushing.release()

    def read(self, **kwargs: Any) -> list[HourCounts]:
        return self.stats.read(**kwargs)

    def scopes(self, **kwargs: Any) -> set[str]:
        return self.stats.scopes(**kwargs)
