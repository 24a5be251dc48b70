"""The plan of a recipient search: which GSI Queries, in which order, with which conditions.

``emailops.aws.journal_search`` runs the plan a page at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from emailops.aws.journal import sent_at_key
from emailops.core.contract import address_key, address_spellings

__all__ = [
    "NO_DELIVERY_REPORT",
    "RECIPIENT_INDEX",
    "RECIPIENT_KEY_INDEX",
    "SES_ID_INDEX",
    "JournalCriteria",
    "SearchPosition",
    "Segment",
    "SegmentExpression",
    "go_recipients",
    "quoted",
    "recipient_keys",
    "recipient_plan",
]

RECIPIENT_INDEX = "RecipientSentAtIndex"  # the Go service's: Recipient exactly as written
RECIPIENT_KEY_INDEX = "RecipientKeySentAtIndex"  # ours: the recipient's address_key
SES_ID_INDEX = "SesMessageIdIndex"
_LAST_SENT_AT_KEY = sent_at_key(10**20 - 1)


@dataclass(frozen=True)
class JournalCriteria:
    """What narrows a recipient search. ``since``/``until`` are inclusive epoch seconds."""

    message_id: str | None = None
    status: str | None = None
    since: int | None = None
    until: int | None = None
    # DeliveryStatus (DELIVERED, BOUNCED...), or NO_DELIVERY_REPORT for rows without one.
    delivery_status: str | None = None


NO_DELIVERY_REPORT = "NONE"


@dataclass(frozen=True)
class Segment:
    """One Query's partition: ``hash_attr = value`` on ``index``, ordered by SentAtKey."""

    index: str
    hash_attr: str
    value: str
    go_rows_only: bool = False  # keep only rows without RecipientKey (the Go consumer's)
    until: int | None = None  # no row of this segment is newer (epoch seconds)

    def holds(self, item: dict[str, Any]) -> bool:
        """Whether a raw item belongs to this segment."""
        if _raw_string(item, self.hash_attr) != self.value:
            return False
        return not (self.go_rows_only and "RecipientKey" in item)

    def start_key(self, item: dict[str, Any]) -> dict[str, str]:
        """What ExclusiveStartKey needs to resume this Query just past ``item``."""
        return {
            "Id": _raw_string(item, "Id") or "",
            self.hash_attr: self.value,
            "SentAtKey": _raw_string(item, "SentAtKey") or "",
        }


@dataclass(frozen=True)
class SearchPosition:
    """Where a page starts: just past ``start_key`` in plan segment ``segment`` (``backward``:
    reading back towards the first page). ``legacy_plan`` records that the search began without
    RecipientKeySentAtIndex, so that every page of it follows the same plan."""

    segment: int
    start_key: dict[str, str] | None
    backward: bool = False
    legacy_plan: bool = False


def recipient_keys(address: str) -> list[str]:
    """The RecipientKey values the rows of ``address``'s mailbox are stored under, its
    ``address_key`` first: every row written since RecipientKey became the address_key carries
    it, whatever the spelling. Rows written before carry their spelling lowercased, which differs
    from the key only for quotes or a display name (``contract.address_spellings``, lowercased)."""
    return list(dict.fromkeys(s.lower() for s in address_spellings(address)))


def go_recipients(address: str) -> list[str]:
    """The Recipient values a Go consumer's row of ``address``'s mailbox can be found under: that
    index holds the spelling exactly as the producer wrote it, so only the spellings told from
    the address (``contract.address_spellings``)."""
    return address_spellings(address)


def recipient_plan(
    recipient: str, *, legacy_plan: bool, newest_first: bool, go_rows_until: int | None = None
) -> list[Segment]:
    """The Queries that together find every row for ``recipient``, in display order.

    Newest first, the plan is:

    1. ``RecipientKeySentAtIndex``, RecipientKey = the address's ``address_key``. Every row the
       new consumer writes carries RecipientKey, so this single Query finds every spelling of the
       mailbox (case, quotes, a display name) and fills whole pages on its own once the Go
       consumer is retired. When the address as typed, lowercased, is not its key (it has quotes
       or angle brackets), a second Query on that spelling finds rows written before
       RecipientKey was the key.
    2. ``RecipientSentAtIndex``, Recipient = the address exactly as typed, then (when it differs)
       its lowercased form, each keeping only rows *without* RecipientKey: the Go consumer's rows,
       which segment 1 cannot see. That filter keeps the segments disjoint, so no row shows twice.

    The Go rows predate the cutover, so the concatenation stays in time order; oldest first reverses
    the segments. Segment 2 must read past the recipient's new rows to reach the Go rows, which is
    cheap for most people but not for someone with thousands of emails: ``go_rows_until`` (the
    cutover, JOURNAL_GO_CUTOVER) bounds segment 2 by a key condition, so it reads only rows written
    before it, and nothing once they have expired. Without RecipientKeySentAtIndex (``legacy_plan``)
    only segment 2 remains, unfiltered and unbounded.
    """
    lowered = recipient.lower()
    ours = [
        Segment(RECIPIENT_KEY_INDEX, "RecipientKey", value)
        for value in dict.fromkeys([address_key(recipient), recipient.strip().lower()])
    ]
    go_rows = [
        Segment(
            RECIPIENT_INDEX,
            "Recipient",
            value,
            go_rows_only=not legacy_plan,
            until=None if legacy_plan else go_rows_until,
        )
        for value in dict.fromkeys([recipient, lowered])
    ]
    plan = go_rows if legacy_plan else [*ours, *go_rows]
    return plan if newest_first else plan[::-1]


def quoted(value: str) -> str:
    return '"' + value.replace('"', '\\"') + '"'


class SegmentExpression:
    """The key condition and filter of one segment's Query, and a readable twin of each."""

    def __init__(self, segment: Segment, criteria: JournalCriteria) -> None:
        self.names = {"#h": segment.hash_attr}
        self.values: dict[str, Any] = {":h": {"S": segment.value}}
        self.key = "#h = :h"
        self.readable_key = f"{segment.hash_attr} = {quoted(segment.value)}"
        bounds = [b for b in (criteria.until, segment.until) if b is not None]
        self.empty = bool(bounds) and criteria.since is not None and criteria.since > min(bounds)
        if criteria.since is not None or bounds:
            # A key condition, not a filter: DynamoDB reads only the rows in range.
            low = sent_at_key(max(0, criteria.since or 0))
            high = sent_at_key(min(bounds)) if bounds else _LAST_SENT_AT_KEY
            self.names["#sk"] = "SentAtKey"
            self.values |= {":from": {"S": low}, ":to": {"S": high}}
            self.key += " AND #sk BETWEEN :from AND :to"
            self.readable_key += f" AND SentAtKey BETWEEN {quoted(low)} AND {quoted(high)}"
        filters, readable = [], []
        if segment.go_rows_only:
            self.names["#rk"] = "RecipientKey"
            filters.append("attribute_not_exists(#rk)")
            readable.append("attribute_not_exists(RecipientKey)")
        for attr, value in (("MessageId", criteria.message_id), ("Status", criteria.status)):
            if value:
                name = attr.lower()
                self.names[f"#{name}"] = attr
                self.values[f":{name}"] = {"S": value}
                filters.append(f"#{name} = :{name}")
                readable.append(f"{attr} = {quoted(value)}")
        if criteria.delivery_status == NO_DELIVERY_REPORT:
            self.names["#ds"] = "DeliveryStatus"
            filters.append("attribute_not_exists(#ds)")
            readable.append("attribute_not_exists(DeliveryStatus)")
        elif criteria.delivery_status:
            self.names["#ds"] = "DeliveryStatus"
            self.values[":ds"] = {"S": criteria.delivery_status}
            filters.append("#ds = :ds")
            readable.append(f"DeliveryStatus = {quoted(criteria.delivery_status)}")
        self.filter = " AND ".join(filters)
        self.readable_filter = " AND ".join(readable)


def _raw_string(item: dict[str, Any], attr: str) -> str | None:
    value = item.get(attr)
    return value.get("S") if isinstance(value, dict) else None
