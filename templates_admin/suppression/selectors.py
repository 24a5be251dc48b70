"""Reads of the suppression list (``SUPPRESSION_TABLE``) and of its removal audit trail."""

from __future__ import annotations

from dataclasses import dataclass, field

from emailops import container
from emailops.aws.suppression import Suppression
from emailops.core.contract import address_key
from templates_admin.models import SuppressionRemoval

__all__ = [
    "PAGE_SIZE",
    "InvalidCursor",
    "SuppressionEntry",
    "SuppressionPage",
    "address_suppression",
    "suppression_entry",
    "suppression_search",
]

PAGE_SIZE = 50
RECENT_REMOVALS = 20


class InvalidCursor(ValueError):
    """A page link that was altered or truncated."""


@dataclass(frozen=True)
class SuppressionPage:
    prefix: str
    entries: list[Suppression]
    next_cursor: str | None
    recent_removals: list[SuppressionRemoval] = field(default_factory=list)


def suppression_search(
    *, prefix: str = "", cursor: str | None = None, limit: int = PAGE_SIZE
) -> SuppressionPage:
    """One page of entries whose address starts with ``prefix`` (any case), and the latest
    removals. Raises InvalidCursor for a damaged page link; EmailOpsError when AWS fails."""
    prefix = prefix.strip()  # the table is searched as typed and lowercased (Go rows keep case)
    try:
        entries, next_cursor = container.current().suppression_list.search(
            prefix=prefix, cursor=cursor, limit=limit
        )
    except ValueError as exc:  # the store's cursor did not decode
        raise InvalidCursor("this page link is damaged; start the search again") from exc
    removals = SuppressionRemoval.objects.select_related("user")
    if prefix:
        removals = removals.filter(address__startswith=prefix.lower())
    return SuppressionPage(
        prefix=prefix,
        entries=entries,
        next_cursor=next_cursor,
        recent_removals=list(removals[:RECENT_REMOVALS]),
    )


@dataclass(frozen=True)
class SuppressionEntry:
    """One address: its suppression (None when it is not suppressed) and past removals."""

    address: str
    suppression: Suppression | None
    removals: list[SuppressionRemoval] = field(default_factory=list)


def suppression_entry(*, address: str) -> SuppressionEntry:
    address = address.strip()  # as given: the table tries the spelling, then its address_key
    removals = SuppressionRemoval.objects.filter(address=address_key(address))
    suppression = container.current().suppression_list.get(address)
    return SuppressionEntry(
        address=suppression.address if suppression else address,  # the row's own spelling
        suppression=suppression,
        removals=list(removals.select_related("user")),
    )


def address_suppression(*, address: str) -> Suppression | None:
    """The address's suppression, or None: for pages that warn before sending to it."""
    return container.current().suppression_list.get(address)
