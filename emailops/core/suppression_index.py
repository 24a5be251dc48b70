"""The suppression check without an AWS call: a shared index of suppressed addresses in front of
the suppression table.

The table stays the source of truth. The index (a Redis set, ``emailops.redis.suppression``) holds
every suppressed address and is kept in step by whoever adds or removes one: every writer goes
through ``IndexedSuppressionList``, which writes the table first, then the index. A consumer asks
the index; only an address the index says is suppressed costs a table read (for the reason words,
and so a stale entry never blocks a send the table allows). An index that is incomplete (never
built, evicted, expired) is rebuilt from the table by one consumer; an index that cannot be
reached is skipped for ``retry_seconds``: the table answers meanwhile, as it did before the index.
See docs/pipeline.md ("The suppression check").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from emailops.core.contract import address_key
from emailops.core.errors import SharedStateUnavailable
from emailops.core.events import EventLog

__all__ = [
    "IndexIncomplete",
    "IndexUnavailable",
    "IndexedSuppressionList",
    "SuppressionIndex",
    "SuppressionTable",
]

logger = logging.getLogger("emailops.suppression_index")


class IndexUnavailable(SharedStateUnavailable):
    """The index's store cannot be reached (or answered with an error)."""


class IndexIncomplete(Exception):
    """The index does not (yet) hold every suppressed address: it must not answer "no"."""


class SuppressionIndex(Protocol):
    def contains(self, address: str) -> bool:
        """Whether ``address`` is suppressed. Raises IndexIncomplete or IndexUnavailable."""
        ...

    def added(self, address: str) -> None: ...

    def removed(self, address: str) -> None: ...

    def rebuild(self, addresses: Callable[[], Iterable[str]]) -> bool:
        """Replace the index with ``addresses()`` (read only if this caller gets to rebuild);
        False when another caller is rebuilding or a write raced the rebuild."""
        ...


class SuppressionTable(Protocol):
    def suppression_reason(self, address: str) -> str | None: ...

    def add(
        self,
        address: str,
        *,
        reason: str,
        detail: str,
        source: str,
        now: int,
        also: tuple[str, ...] = (),
    ) -> bool: ...

    def remove(self, address: str) -> Any: ...

    def addresses(self) -> Iterator[str]:
        """Every suppressed address (a full read of the table)."""
        ...


class IndexedSuppressionList:
    """The core's SuppressionList (and the events consumer's and the console's writer), backed by
    ``table`` and answered by ``index`` when it can."""

    def __init__(
        self,
        table: SuppressionTable,
        index: SuppressionIndex,
        *,
        clock: Callable[[], float],
        retry_seconds: float = 5.0,
    ) -> None:
        self.table = table
        self.index = index
        self.clock = clock
        self.retry_seconds = retry_seconds
        self._skip_until = 0.0  # the index failed: the table answers until then
        self._rebuild_after = 0.0
        self._log = EventLog(logger)

    def suppression_reason(self, address: str) -> str | None:
        key = address_key(address)
        now = self.clock()
        if now >= self._skip_until:
            try:
                if not self.index.contains(key):
                    return None
            except IndexIncomplete:
                self._rebuild(now)
            except IndexUnavailable as exc:
                self._unavailable("check", exc, now)
        # The spelling as given: the table tries it exactly (a Go row), then its address_key.
        return self.table.suppression_reason(address)

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
        added = self.table.add(
            address, reason=reason, detail=detail, source=source, now=now, also=also
        )
        # Also when the table had it already: a writer that missed the index earlier is healed.
        self._index_write("add", address)
        return added

    def remove(self, address: str) -> Any:
        removed = self.table.remove(address)
        self._index_write("remove", address)
        return removed

    def __getattr__(self, name: str) -> Any:
        """Reads the console makes (get, search) go to the table."""
        return getattr(self.table, name)

    def _index_write(self, action: str, address: str) -> None:
        key = address_key(address)
        try:
            if action == "add":
                self.index.added(key)
            else:
                self.index.removed(key)
        except IndexUnavailable as exc:
            # The table is written; the index misses this change until it is rebuilt (it expires
            # after its max age, an hour), so a removal costs one table read per send
            # to that address and an addition is seen only then: logged as ERROR.
            self._log.error(
                "suppression.index_not_updated", action=action, address=key, error=str(exc)
            )

    def _rebuild(self, now: float) -> None:
        if now < self._rebuild_after:
            return
        self._rebuild_after = now + self.retry_seconds
        try:
            built = self.index.rebuild(self.table.addresses)
        except IndexUnavailable as exc:
            self._unavailable("rebuild", exc, now)
            return
        self._log.info("suppression.index_rebuilt" if built else "suppression.index_not_rebuilt")

    def _unavailable(self, action: str, exc: Exception, now: float) -> None:
        self._skip_until = now + self.retry_seconds
        self._log.warning(
            "suppression.index_unavailable",
            action=action,
            error=str(exc),
            retryInSeconds=self.retry_seconds,
        )
