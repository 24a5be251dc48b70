"""A journal search as CSV, written row by row as its pages are read (the view streams it)."""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from emailops.core.errors import EmailOpsError
from emailops.core.journal_row import JournalRow
from templates_admin.journal.delivery import delivery_outcome
from templates_admin.journal.presentation import branding, excerpt
from templates_admin.journal.selectors import JournalSearchResult

__all__ = ["COLUMNS", "csv_lines", "filename"]

COLUMNS = (
    "Time (UTC)",
    "Recipient",
    "messageId",
    "Status",
    "Delivery",
    "Delivery reported at",
    "Bounce type",
    "Diagnostic code",
    "Subject",
    "Branding",
    "Error",
    "SES message id",
    "Journal Id",
)
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


class _Echo:
    """csv.writer writes into this and gets the line back, so each row can be yielded."""

    def write(self, value: str) -> str:
        return value


def _safe(value: Any) -> str:
    """A spreadsheet must not run a cell as a formula: an address or subject is someone's input."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA) else text


def _utc(epoch: Any) -> str:
    if not isinstance(epoch, int) or isinstance(epoch, bool):
        return ""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _cells(row: JournalRow) -> list[str]:
    outcome = delivery_outcome(row)
    values = (
        _utc(row.timestamp),
        row.recipient,
        row.message_id,
        row.status,
        outcome.text if outcome else "",
        row.delivery.at,
        outcome.bounce if outcome else "",
        row.delivery.diagnostic,
        row.subject,
        branding(row.template_key),
        excerpt(row.error, 1000),
        row.ses_message_id,
        row.key,
    )
    return [_safe(value) for value in values]


def csv_lines(
    pages: Iterable[JournalSearchResult],
    *,
    max_rows: int,
    on_done: Callable[[int], None] | None = None,
) -> Iterator[str]:
    """The header, one line per row, and a last line when the export did not get every row: the
    row cap was reached, or the journal could not be read part-way (the response has started by
    then, so the file itself must say so). ``on_done`` gets the number of rows written, also
    when the download was cut short (the audit records what actually left)."""
    writer = csv.writer(_Echo())
    count, more = 0, False
    try:
        yield writer.writerow(COLUMNS)
        try:
            for page in pages:
                for row in page.rows:
                    yield writer.writerow(_cells(row))
                    count += 1
                more = bool(page.next_cursor)
        except EmailOpsError as exc:
            yield writer.writerow(
                [f"# export stopped after {count} rows: the journal could not be read: "
                 f"{exc.describe()}"]
            )  # fmt: skip
            return
    finally:
        if on_done is not None:
            on_done(count)
    if more and count >= max_rows:
        yield writer.writerow(
            [f"# stopped at {max_rows} rows, the export's limit: narrow the search (dates, "
             "filters) to export the rest"]
        )  # fmt: skip


def filename(query: str, *, now: datetime) -> str:
    """journal-dana-example.com-20261130.csv: what was searched, and when."""
    safe = re.sub(r"[^A-Za-z0-9.@_-]+", "-", query.strip())[:80].replace("@", "-") or "search"
    return f"journal-{safe}-{now:%Y%m%d-%H%M}.csv"
