"""Reads of the suppression list (``SUPPRESSION_TABLE``) and of its removal audit trail."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from emailops.aws.suppression import Suppression
from emailops.core.contract import address_key
from emailops.core.errors import EmailOpsError
from emailops.core.preferences import how_text
from templates_admin.categories import category_labels
from templates_admin.display import local_text, utc_text
from templates_admin.models import PreferenceResubscribe, SuppressionRemoval

if TYPE_CHECKING:
    from emailops.aws.suppression import DynamoSuppressionList
    from emailops.core.preferences import PreferenceStore

__all__ = [
    "PAGE_SIZE",
    "AddressPreferences",
    "InvalidCursor",
    "PreferenceRow",
    "SuppressionEntry",
    "SuppressionPage",
    "address_preferences",
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
    *,
    suppression_list: DynamoSuppressionList,
    prefix: str = "",
    cursor: str | None = None,
    limit: int = PAGE_SIZE,
) -> SuppressionPage:
    """One page of entries whose address starts with ``prefix`` (any case), and the latest
    removals. Raises InvalidCursor for a damaged page link; EmailOpsError when AWS fails."""
    prefix = prefix.strip()  # the table is searched as typed and lowercased (Go rows keep case)
    try:
        entries, next_cursor = suppression_list.search(prefix=prefix, cursor=cursor, limit=limit)
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


def suppression_entry(*, suppression_list: DynamoSuppressionList, address: str) -> SuppressionEntry:
    address = address.strip()  # as given: the table tries the spelling, then its address_key
    removals = SuppressionRemoval.objects.filter(address=address_key(address))
    suppression = suppression_list.get(address)
    return SuppressionEntry(
        address=suppression.address if suppression else address,  # the row's own spelling
        suppression=suppression,
        removals=list(removals.select_related("user")),
    )


def address_suppression(
    *, suppression_list: DynamoSuppressionList, address: str
) -> Suppression | None:
    """The address's suppression, or None: for pages that warn before sending to it."""
    return suppression_list.get(address)


# --- Preferences (docs/preferences.md) ---------------------------------------------------------


@dataclass(frozen=True)
class PreferenceRow:
    """One category's preference of the address, or one change of it (history), as shown."""

    category: str
    label: str
    subscribed: bool
    how: str  # the stored HowChanged value
    how_text: str  # in words: "from the link" is the recipient's own act
    when: str
    when_utc: str


@dataclass(frozen=True)
class AddressPreferences:
    available: bool  # False: this deployment has no preference store
    error: str = ""  # the store could not be read (the rest of the page still shows)
    current: list[PreferenceRow] = field(default_factory=list)
    history: list[PreferenceRow] = field(default_factory=list)
    resubscribes: list[PreferenceResubscribe] = field(default_factory=list)


def _row(labels: dict[str, str], *, category: str, subscribed: bool, how: str, at) -> PreferenceRow:
    at = at if isinstance(at, int | float) and not isinstance(at, bool) else None
    return PreferenceRow(
        category=category,
        label=labels.get(category) or category,
        subscribed=subscribed,
        how=how,
        how_text=how_text(how),
        when=local_text(at),
        when_utc=utc_text(at),
    )


def address_preferences(
    *, preference_store: PreferenceStore | None, address: str
) -> AddressPreferences:
    """The address's preference per category and their history (newest first), from the
    preference store (None: this deployment has none), with the console's labels; and Support's
    re-subscriptions of it."""
    key = address_key(address.strip())
    resubscribes = list(
        PreferenceResubscribe.objects.filter(address=key).select_related("user")[:50]
    )
    store = preference_store
    if store is None:
        return AddressPreferences(available=False, resubscribes=resubscribes)
    labels = category_labels()
    read_history = getattr(store, "history", None)
    try:
        preferences = store.of_address(address)
        entries = (read_history(address) if read_history else None) or []
    except EmailOpsError as exc:
        return AddressPreferences(available=True, error=exc.describe(), resubscribes=resubscribes)
    current = [
        _row(labels, category=p.category, subscribed=p.subscribed, how=p.how, at=p.at)
        for p in sorted(preferences, key=lambda p: p.category)
    ]
    # The store's PreferenceChange rows, newest first (re-subscribes from the link among them).
    history = [
        _row(labels, category=c.category, subscribed=c.subscribed, how=c.how, at=c.at)
        for c in entries
    ]
    return AddressPreferences(
        available=True, current=current, history=history, resubscribes=resubscribes
    )
