"""One address, everything that decides whether mail reaches it: what is held for it now, its
rows that were journaled and not delivered, its unsubscribes, its suppression; and, for the
address page, its recent sends and its preferences' history.

"Did they get it?" starts here: the journal search and the address page say these states first,
in words, each with its time, its reason and where to act (``_address_states.html``). Reads only:
the rate-counter table's hold records (by the recipient's hash), the journal rows already read,
the preference store and the suppression list.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from emailops.aws.rate_counter import HeldRequest
from emailops.aws.suppression import Suppression
from emailops.core.errors import EmailOpsError
from emailops.core.journal_row import JournalRow
from emailops.core.journal_words import logged_only_cause, suppression_reason
from emailops.core.send_guard import recipient_digest
from templates_admin.categories import preference_store
from templates_admin.display import local_text, utc_text
from templates_admin.journal import selectors
from templates_admin.journal.release import RELEASABLE
from templates_admin.suppression import selectors as suppression_selectors
from templates_admin.suppression.selectors import AddressPreferences, PreferenceRow

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = ["AddressOverview", "AddressStates", "address_overview", "address_states"]

RECENT_SENDS = 20
_NOT_DELIVERED_SHOWN = 5  # the newest few: the rest are in the list below them


@dataclass(frozen=True)
class Held:
    request: HeldRequest
    since: str
    since_utc: str
    until: str


@dataclass(frozen=True)
class NotDelivered:
    row: JournalRow
    cause: str
    at: str
    at_utc: str
    releasable: bool
    url: str = ""  # its row's page (the view's)


@dataclass(frozen=True)
class Suppressed:
    entry: Suppression
    reason: str
    since: str
    since_utc: str


@dataclass(frozen=True)
class AddressStates:
    """What keeps mail from the address, newest facts first; ``problems``: what could not be read
    (the page still says the rest)."""

    address: str
    held: list[Held] = field(default_factory=list)
    not_delivered: list[NotDelivered] = field(default_factory=list)
    more_not_delivered: int = 0
    unsubscribed: list[PreferenceRow] = field(default_factory=list)
    suppressed: Suppressed | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def any(self) -> bool:
        return bool(self.held or self.not_delivered or self.unsubscribed or self.suppressed)


def _held(adapters: Container, address: str) -> list[Held]:
    counters = adapters.rate_counters
    if counters is None:
        return []
    found = counters.held_for(recipient_digest(address), now=int(time.time()))
    return [
        Held(h, local_text(h.first_held_at), utc_text(h.first_held_at), local_text(h.held_until))
        for h in found
    ]


def _not_delivered(rows: Sequence[JournalRow]) -> list[NotDelivered]:
    return [
        NotDelivered(
            row,
            logged_only_cause(row) or "logged only, reason unknown",
            local_text(row.timestamp),
            utc_text(row.timestamp),
            row.logged_only_reason in RELEASABLE,
        )
        for row in sorted(rows, key=lambda r: r.timestamp or 0, reverse=True)
        if row.logged_only
    ]


def address_states(
    *,
    adapters: Container,
    address: str,
    rows: Sequence[JournalRow] = (),
    preferences: AddressPreferences | None = None,
    suppressions: bool = True,
) -> AddressStates:
    """The address's held requests, its log-only rows among ``rows`` (the rows already read for
    it), and, when ``suppressions`` (the reader may see them), its unsubscribes (from
    ``preferences`` when already read) and its suppression."""
    address = address.strip()
    problems: list[str] = []
    held: list[Held] = []
    try:
        held = _held(adapters, address)
    except EmailOpsError as exc:
        problems.append(f"what the rate safeguard holds could not be read: {exc.describe()}")
    logged = _not_delivered(rows)
    unsubscribed: list[PreferenceRow] = []
    suppressed = None
    if suppressions:
        preferences = preferences or suppression_selectors.address_preferences(
            preference_store=preference_store(adapters), address=address
        )
        if preferences.error:
            problems.append(f"the preferences could not be read: {preferences.error}")
        unsubscribed = [p for p in preferences.current if not p.subscribed]
        try:
            entry = suppression_selectors.address_suppression(
                suppression_list=adapters.suppression_list, address=address
            )
        except EmailOpsError as exc:
            problems.append(f"the suppression list could not be read: {exc.describe()}")
            entry = None
        if entry is not None:
            suppressed = Suppressed(
                entry,
                suppression_reason(entry.reason),
                local_text(entry.created_at),
                utc_text(entry.created_at),
            )
    return AddressStates(
        address=address,
        held=held,
        not_delivered=logged[:_NOT_DELIVERED_SHOWN],
        more_not_delivered=max(0, len(logged) - _NOT_DELIVERED_SHOWN),
        unsubscribed=unsubscribed,
        suppressed=suppressed,
        problems=problems,
    )


@dataclass(frozen=True)
class AddressOverview:
    """The address page: its states, its recent sends, its preferences and their history."""

    states: AddressStates
    sends: selectors.JournalSearchResult
    preferences: AddressPreferences | None  # None: the reader may not see them


def address_overview(*, adapters: Container, address: str, suppressions: bool) -> AddressOverview:
    """Everything the address page shows. Raises JournalSearchError when ``address`` is not an
    address; EmailOpsError when the journal cannot be read."""
    address = address.strip()
    if not selectors.looks_like_email(address):
        raise selectors.JournalSearchError(f"{address!r} is not an email address")
    sends = selectors.journal_search(adapters=adapters, query=address, limit=RECENT_SENDS)
    preferences = (
        suppression_selectors.address_preferences(
            preference_store=preference_store(adapters), address=address
        )
        if suppressions
        else None
    )
    states = address_states(
        adapters=adapters,
        address=address,
        rows=sends.rows,
        preferences=preferences,
        suppressions=suppressions,
    )
    return AddressOverview(states=states, sends=sends, preferences=preferences)
