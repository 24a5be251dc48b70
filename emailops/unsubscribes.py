"""Counting unsubscribes for the dashboard: ``record_unsubscribe(category)`` is what the public
unsubscribe endpoint calls after it has written a preference to unsubscribed (one-click or the
page's toggle). It ADDs one to the account's hour in STATS_TABLE, as ``unsubscribed`` and as
``unsubscribed:<category>``, beside ``complained``: the dashboard reads them with the counters it
already reads (one Query), never the preferences table.

Written at once (not buffered: the endpoint is a web process that may never flush), and never
raising: a lost count must not fail the recipient's unsubscribe.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from emailops.core.errors import EmailOpsError
from emailops.core.events import EventLog
from emailops.core.reputation import ACCOUNT, hour_of

if TYPE_CHECKING:
    from emailops.aws.stats import BufferedStats

__all__ = ["UNSUBSCRIBED", "record_unsubscribe", "unsubscribe_counter"]

UNSUBSCRIBED = "unsubscribed"
_PREFIX = f"{UNSUBSCRIBED}:"
log = EventLog(logging.getLogger("emailops.stats"))


def unsubscribe_counter(category: str) -> str:
    """The account counter of one category's unsubscribes."""
    return f"{_PREFIX}{category}"


def category_of_counter(name: str) -> str | None:
    """The category of an ``unsubscribed:<category>`` counter; None for any other counter."""
    return name[len(_PREFIX) :] if name.startswith(_PREFIX) else None


def record_unsubscribe(
    category: str, *, stats: BufferedStats | None, now: float | None = None
) -> bool:
    """Count one unsubscribe from ``category`` in the current hour in ``stats`` (the container's);
    False when not counted (no STATS_TABLE, so no ``stats``, or the table refused: logged)."""
    if stats is None or not category:
        return False
    hour = hour_of(time.time() if now is None else now)
    try:
        stats.stats.add_scope(
            scope=ACCOUNT, hour=hour, counts={UNSUBSCRIBED: 1, unsubscribe_counter(category): 1}
        )
    except EmailOpsError as exc:
        log.warning("stats.unsubscribe_not_counted", category=category, error=exc.describe())
        return False
    return True
