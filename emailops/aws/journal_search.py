"""Reads of the journal table for the console and ``email_log``: Query and GetItem only, never Scan.

The writes the pipeline makes live in ``emailops.aws.journal``; the attribute layout is documented
there.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws.clients import error_code, translate_error
from emailops.aws.journal_codec import item_from_dynamo, stored_row
from emailops.aws.journal_plan import (
    NO_DELIVERY_REPORT,
    RECIPIENT_INDEX,
    RECIPIENT_KEY_INDEX,
    SES_ID_INDEX,
    JournalCriteria,
    SearchPosition,
    Segment,
    SegmentExpression,
    quoted,
    recipient_plan,
)
from emailops.core.errors import ConfigurationError
from emailops.core.journal_row import JournalRow
from emailops.core.stored_attributes import StoredAttributes

__all__ = [
    "NO_DELIVERY_REPORT",
    "RECIPIENT_INDEX",
    "RECIPIENT_KEY_INDEX",
    "SES_ID_INDEX",
    "IndexUnavailable",
    "JournalCriteria",
    "JournalPage",
    "JournalSearch",
    "QueryRun",
    "SearchPosition",
    "Segment",
    "recipient_plan",
]


class IndexUnavailable(ConfigurationError):
    """A GSI the search needs is missing from the table, or still backfilling."""

    def __init__(self, index: str, *, reason: str) -> None:
        self.index = index
        super().__init__("query journal index", key=index, reason=reason)


def _index_problem(exc: ClientError, index: str) -> IndexUnavailable | None:
    """DynamoDB says "The table does not have the specified index" (moto: "Invalid index")."""
    code = error_code(exc)
    message = exc.response.get("Error", {}).get("Message", "")
    if code == "ValidationException" and "backfilling" in message:
        return IndexUnavailable(index, reason=f"index {index} is still being built (backfilling)")
    missing = (code == "ValidationException" and "specified index" in message) or (
        code == "ResourceNotFoundException" and "index" in message.lower()
    )
    if missing:
        return IndexUnavailable(
            index,
            reason=f"the journal table has no index {index}: "
            "`python manage.py bootstrap_aws` adds it",
        )
    return None


@dataclass
class QueryRun:
    """One segment as a page queried it: the exact conditions, and what it cost."""

    operation: str
    index: str
    key_condition: str
    filter: str = ""
    order: str = ""
    calls: int = 0
    scanned: int = 0
    matched: int = 0
    problem: str = ""

    def describe(self) -> str:
        text = f"{self.operation} {self.index}: {self.key_condition}"
        if self.filter:
            text += f"; filter {self.filter}"
        if self.order:
            text += f"; {self.order}"
        return text


@dataclass(frozen=True)
class JournalPage:
    rows: list[JournalRow]
    # The rows' attributes as stored, in the rows' order: for the support view's raw listing.
    stored: tuple[StoredAttributes, ...] = ()
    next: SearchPosition | None = None  # further on in display order
    previous: SearchPosition | None = None  # back towards the first page
    runs: tuple[QueryRun, ...] = ()
    partial: bool = False  # the read budget ran out before the page was full
    problems: tuple[str, ...] = ()

    @property
    def calls(self) -> int:
        return sum(run.calls for run in self.runs)

    @property
    def scanned(self) -> int:
        return sum(run.scanned for run in self.runs)


@dataclass(eq=False)  # an adapter: compared by identity
class JournalSearch:
    """Paged reads of the journal through its GSIs.

    A page with a FilterExpression (messageId, status, delivery status, or segment 2's Go-rows-only filter) may need
    several Queries to find ``limit`` matching rows; a page stops after ``max_calls`` Queries or
    ``max_scanned`` rows read, returning what it found and where to go on from (``partial``).
    ``go_rows_until``: when the Go consumer stopped writing (see ``recipient_plan``).
    """

    client: Any
    table: str
    _: KW_ONLY
    max_calls: int = 5
    max_scanned: int = 2000
    go_rows_until: int | None = None

    def recipient_page(
        self,
        recipient: str,
        criteria: JournalCriteria,
        *,
        position: SearchPosition | None = None,
        limit: int = 50,
        newest_first: bool = True,
    ) -> JournalPage:
        legacy_plan = bool(position and position.legacy_plan)
        try:
            return _PageReader(self, recipient, criteria, newest_first, legacy_plan).read(
                position, limit
            )
        except IndexUnavailable as exc:
            if position is not None:
                raise
            # No RecipientKeySentAtIndex: the whole search runs on the Go service's index.
            page = _PageReader(self, recipient, criteria, newest_first, True).read(None, limit)
            return replace(page, problems=(exc.reason, *page.problems))

    def query(self, params: dict[str, Any], *, index: str, what: str, key: str) -> dict[str, Any]:
        try:
            return self.client.query(TableName=self.table, IndexName=index, **params)
        except ClientError as exc:
            problem = _index_problem(exc, index)
            if problem:
                raise problem from exc
            raise translate_error(exc, what, key=key) from exc
        except BotoCoreError as exc:
            raise translate_error(exc, what, key=key) from exc

    def by_ses_message_id(self, ses_message_id: str) -> JournalPage:
        """The row(s) SES accepted under this message id (one, in practice)."""
        run = QueryRun("Query", SES_ID_INDEX, f"SesMessageId = {quoted(ses_message_id)}")
        try:
            response = self.query(
                {
                    "KeyConditionExpression": "#s = :s",
                    "ExpressionAttributeNames": {"#s": "SesMessageId"},
                    "ExpressionAttributeValues": {":s": {"S": ses_message_id}},
                    "Limit": 25,
                },
                index=SES_ID_INDEX,
                what="look up SES message id",
                key=ses_message_id,
            )
        except IndexUnavailable as exc:
            run.problem = exc.reason
            return JournalPage(rows=[], runs=(run,), problems=(exc.reason,))
        page = _page([item_from_dynamo(item) for item in response.get("Items", [])])
        run.calls, run.scanned, run.matched = (
            1,
            int(response.get("ScannedCount", 0)),
            len(page.rows),
        )
        return replace(page, runs=(run,))


def _page(items: list[dict[str, Any]]) -> JournalPage:
    """A page of these plain items: each as a row, and its attributes as stored."""
    found = [stored_row(item) for item in items]
    return JournalPage(rows=[f.row for f in found], stored=tuple(f.attributes for f in found))


@dataclass
class _Progress:
    """What reading a page has gathered so far (rows are raw items, in reading order)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    runs: dict[int, QueryRun] = field(default_factory=dict)  # by plan segment
    problems: list[str] = field(default_factory=list)
    resume: SearchPosition | None = None  # where the next page in reading order starts
    partial: bool = False


class _PageReader:
    """Reads one page along a recipient plan, forward or backward, within the budget."""

    def __init__(
        self,
        search: JournalSearch,
        recipient: str,
        criteria: JournalCriteria,
        newest_first: bool,
        legacy_plan: bool,
    ) -> None:
        self.search = search
        self.criteria = criteria
        self.legacy_plan = legacy_plan
        self.plan = recipient_plan(
            recipient,
            legacy_plan=legacy_plan,
            newest_first=newest_first,
            go_rows_until=search.go_rows_until,
        )
        self.newest_first = newest_first

    def _position(self, segment: int, key: dict[str, str] | None, backward: bool) -> SearchPosition:
        return SearchPosition(segment, key, backward=backward, legacy_plan=self.legacy_plan)

    def _locate(self, item: dict[str, Any], backward: bool) -> SearchPosition | None:
        for number, segment in enumerate(self.plan):
            if segment.holds(item):
                return self._position(number, segment.start_key(item), backward)
        return None

    def read(self, position: SearchPosition | None, limit: int) -> JournalPage:
        backward = bool(position and position.backward)
        if position and not 0 <= position.segment < len(self.plan):
            raise ValueError(f"search position names segment {position.segment} of the plan")
        progress = self._collect(position, limit, backward)
        rows = progress.rows[::-1] if backward else progress.rows
        if backward:
            # Going back, "further on" is where we came from, and "back" is where we stopped.
            next_position = self._beside(rows[-1] if rows else None, position, backward=False)
            previous_position = progress.resume
        else:
            next_position = progress.resume
            previous_position = self._beside(rows[0] if rows else None, position, backward=True)
        return replace(
            _page([item_from_dynamo(row) for row in rows]),
            next=next_position,
            previous=previous_position,
            runs=tuple(progress.runs.values()),
            partial=progress.partial,
            problems=tuple(dict.fromkeys(progress.problems)),
        )

    def _beside(
        self, row: dict[str, Any] | None, position: SearchPosition | None, *, backward: bool
    ) -> SearchPosition | None:
        """Where to read from to leave this page through ``row`` (its edge), or, for an empty
        page, through the position it started at; None on the first page."""
        if position is None:
            return None  # the first page (always read forward): nothing comes before it
        if row is not None:
            return self._locate(row, backward)
        if position.start_key:
            return self._position(position.segment, position.start_key, backward)
        return None

    def _collect(self, position: SearchPosition | None, limit: int, backward: bool) -> _Progress:
        """Query segment after segment until the page is full, the plan ends, or the budget does."""
        step = -1 if backward else 1
        number = position.segment if position else 0
        start = position.start_key if position else None
        progress = _Progress()
        runs = progress.runs
        while 0 <= number < len(self.plan):
            segment = self.plan[number]
            expression = SegmentExpression(segment, self.criteria)
            ascending = self.newest_first == backward
            run = runs.setdefault(
                number,
                QueryRun(
                    "Query",
                    segment.index,
                    expression.readable_key,
                    expression.readable_filter,
                    "oldest first" if ascending else "newest first",
                ),
            )
            if expression.empty:
                run.problem = "the date range starts after the Go consumer's last row"
                number, start = number + step, None
                continue
            if (
                sum(r.calls for r in runs.values()) >= self.search.max_calls
                or sum(r.scanned for r in runs.values()) >= self.search.max_scanned
            ):
                progress.resume = self._position(number, start, backward)
                progress.partial = True
                if not run.calls:
                    del runs[number]  # never queried on this page
                break
            wanted = limit - len(progress.rows)
            params: dict[str, Any] = {
                "KeyConditionExpression": expression.key,
                "ExpressionAttributeNames": expression.names,
                "ExpressionAttributeValues": expression.values,
                "ScanIndexForward": ascending,
                "Limit": self._read_limit(expression, wanted, run, runs),
            }
            if expression.filter:
                params["FilterExpression"] = expression.filter
            if start:
                params["ExclusiveStartKey"] = {k: {"S": v} for k, v in start.items()}
            try:
                response = self.search.query(
                    params, index=segment.index, what="search journal", key=segment.value
                )
            except IndexUnavailable as exc:
                if segment.index == RECIPIENT_KEY_INDEX:
                    raise  # the caller switches to the legacy plan
                run.problem = exc.reason
                progress.problems.append(exc.reason)
                number, start = number + step, None
                continue
            items = response.get("Items", [])
            last = response.get("LastEvaluatedKey")
            run.calls += 1
            run.scanned += int(response.get("ScannedCount", 0))
            run.matched += len(items)
            progress.rows += items[:wanted]
            if len(items) > wanted:  # more matches than room: go on just past the last one shown
                key = segment.start_key(items[wanted - 1])
                progress.resume = self._position(number, key, backward)
                break
            if last:
                start = {k: v["S"] for k, v in last.items()}
                if len(progress.rows) == limit:
                    progress.resume = self._position(number, start, backward)
                    break
                continue
            number, start = number + step, None
            if len(progress.rows) == limit:
                if 0 <= number < len(self.plan):
                    progress.resume = self._position(number, None, backward)
                break
        return progress

    def _read_limit(
        self, expression: SegmentExpression, wanted: int, run: QueryRun, runs: dict[int, QueryRun]
    ) -> int:
        """Unfiltered: one row more than the page needs, which tells whether more exist.

        Filtered: enough to fill the page at the match rate seen so far in this segment (at first
        4x the page), within what is left of the page's read budget."""
        if not expression.filter:
            return wanted + 1
        left = self.search.max_scanned - sum(r.scanned for r in runs.values())
        if run.matched:
            estimate = int(wanted * run.scanned / run.matched * 1.25) + 1
        elif run.scanned:
            estimate = left
        else:
            estimate = 4 * wanted + 1
        return max(1, min(left, estimate))
