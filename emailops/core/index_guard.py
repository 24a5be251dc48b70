"""How a table is asked through a shared index of its keys (a Redis set, ``emailops.redis``) that
may be incomplete or unreachable: the index may only say "not there"; anything else is the
table's to answer. An incomplete index is rebuilt from the table by one caller, at most once per
``retry_seconds``; an unreachable one is skipped for ``retry_seconds`` so no send pays its timeout.

The erasure's tombstones (``emailops.core.erasure.IndexedTombstones``) ask through it; the
suppression list (``emailops.core.suppression_index``) follows the same rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from emailops.core.events import EventLog
from emailops.core.suppression_index import IndexIncomplete, IndexUnavailable, SuppressionIndex

__all__ = ["IndexGuard"]


class IndexGuard:
    """``index`` in front of a table whose every key ``full_read`` lists; ``name`` begins its log
    events (``tombstone.index_unavailable``, ``tombstone.index_rebuilt``)."""

    def __init__(
        self,
        index: SuppressionIndex,
        *,
        full_read: Callable[[], Iterable[str]],
        name: str,
        log: EventLog,
        clock: Callable[[], float],
        retry_seconds: float = 5.0,
    ) -> None:
        self.index = index
        self.full_read = full_read
        self.name = name
        self.clock = clock
        self.retry_seconds = retry_seconds
        self._log = log
        self._skip_until = 0.0  # the index failed: the table answers until then
        self._rebuild_after = 0.0

    def absent(self, key: str) -> bool:
        """True only when the index answers that ``key`` is not in the table; False means: ask
        the table (the index holds it, is being rebuilt, or cannot be reached)."""
        now = self.clock()
        if now < self._skip_until:
            return False
        try:
            return not self.index.contains(key)
        except IndexIncomplete:
            self._rebuild(now)
        except IndexUnavailable as exc:
            self._unavailable("check", exc, now)
        return False

    def _rebuild(self, now: float) -> None:
        if now < self._rebuild_after:
            return
        self._rebuild_after = now + self.retry_seconds
        try:
            built = self.index.rebuild(self.full_read)
        except IndexUnavailable as exc:
            self._unavailable("rebuild", exc, now)
            return
        self._log.info(f"{self.name}.index_rebuilt" if built else f"{self.name}.index_not_rebuilt")

    def _unavailable(self, action: str, exc: Exception, now: float) -> None:
        self._skip_until = now + self.retry_seconds
        self._log.warning(
            f"{self.name}.index_unavailable",
            action=action,
            error=str(exc),
            retryInSeconds=self.retry_seconds,
        )
