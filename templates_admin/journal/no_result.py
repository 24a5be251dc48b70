"""Why a recipient search found nothing, so support is not sent to the wrong team.

An empty page has three different causes that call for different people: no row exists for the
address (the producer never queued it: check the producer), the filters hid the rows that exist
(drop the filter), or the date window ends before (or starts after) the rows' times (move the
window). One unfiltered, bounded read of the address tells them apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from emailops.core.journal_row import JournalRow
from templates_admin.display import local_text
from templates_admin.journal import selectors

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = ["EmptyReason", "Why", "journal_search_empty_reason"]

# Rows read to tell why; enough to find the newest and oldest of most addresses.
_SAMPLE = 200
_FILTERS = ("message_id", "status", "delivery")
_WINDOW = ("since", "until")


class Why(StrEnum):
    NO_ROWS = "no-rows"  # nothing for the address at all
    FILTERED = "filtered"  # rows in the window exist; the filters hid them
    WINDOW = "window"  # rows exist, none of them in the date window


@dataclass(frozen=True)
class EmptyReason:
    why: Why
    hidden: int = 0  # rows the filters (or the window) hid, of those read
    more: bool = False  # more rows exist than were read
    newest: str = ""  # the newest row's time, in the console's zone
    oldest: str = ""
    window_ends_first: bool = False  # the window ends before the oldest row (else starts after)

    @property
    def hidden_text(self) -> str:
        count = f"{self.hidden}{'+' if self.more else ''}"
        return f"{count} row{'' if self.hidden == 1 and not self.more else 's'}"


def _within(row: JournalRow, since: int | None, until: int | None) -> bool:
    at = row.timestamp
    if at is None:
        return True
    return (since is None or at >= since) and (until is None or at <= until)


def journal_search_empty_reason(
    result: selectors.JournalSearchResult, arguments: dict[str, Any], *, adapters: Container
) -> EmptyReason | None:
    """Why ``result`` (a search made with ``arguments``, journal_search's keywords) is empty;
    None when it is not empty, is not a recipient search, or stopped at its read budget."""
    if result.rows or result.partial or result.kind != selectors.SearchKind.RECIPIENT:
        return None
    if result.next_cursor or result.previous_cursor:
        return None  # a later page: "no more rows in this direction"
    filtered = any(arguments.get(name) for name in _FILTERS)
    windowed = any(arguments.get(name) for name in _WINDOW)
    if not filtered and not windowed:
        return EmptyReason(Why.NO_ROWS)
    everything = selectors.journal_search(
        adapters=adapters, query=arguments["query"], limit=_SAMPLE
    )
    rows = everything.rows
    if not rows:
        return EmptyReason(Why.NO_ROWS)
    since = _epoch(arguments.get("since"))
    until = _epoch(arguments.get("until"))
    in_window = [row for row in rows if _within(row, since, until)]
    more = bool(everything.next_cursor)
    times = [row.timestamp for row in rows if row.timestamp is not None]
    newest, oldest = (local_text(max(times)), local_text(min(times))) if times else ("", "")
    if windowed and not in_window:
        ends_first = until is not None and bool(times) and until < min(times)
        return EmptyReason(
            Why.WINDOW, len(rows), more, newest, oldest, window_ends_first=ends_first
        )
    return EmptyReason(Why.FILTERED, len(in_window), more, newest, oldest)


def _epoch(moment: Any) -> int | None:
    return int(moment.timestamp()) if moment is not None else None
