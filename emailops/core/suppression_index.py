"""A shared index of a table's keys (a Redis set, ``emailops.redis.suppression``): the port and
its errors. Erasure's tombstones use it (``emailops.core.erasure.IndexedTombstones``), kept in step
by their only writer, the erasure.

It once answered the suppression check too, and no longer does: the suppression table is shared
with the Go service, whose bounce handler (and an operator by hand) writes rows no writer of ours
puts in an index, and a "not suppressed" from it sent to such an address until the next rebuild.
The check reads the table (docs/pipeline.md, "The suppression check").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from emailops.core.errors import SharedStateUnavailable

__all__ = ["IndexIncomplete", "IndexUnavailable", "SuppressionIndex"]


class IndexUnavailable(SharedStateUnavailable):
    """The index's store cannot be reached (or answered with an error)."""


class IndexIncomplete(Exception):
    """The index does not (yet) hold every key of its table: it must not answer "no"."""


class SuppressionIndex(Protocol):
    def contains(self, address: str) -> bool:
        """Whether the table holds ``address``. Raises IndexIncomplete or IndexUnavailable."""
        ...

    def added(self, address: str) -> None: ...

    def removed(self, address: str) -> None: ...

    def rebuild(self, addresses: Callable[[], Iterable[str]]) -> bool:
        """Replace the index with ``addresses()`` (read only if this caller gets to rebuild);
        False when another caller is rebuilding or a write raced the rebuild."""
        ...
