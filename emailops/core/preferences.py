"""Recipient preferences: which categories of email an address has unsubscribed from.

A mapping may put its messageId in a *category* (``TemplateMapping.category``, a slug such as
``dataset-activity``); uncategorised mail is transactional and ``critical`` mail is never held by
a preference. Each (address, category) is one item of the preferences table, keyed by the
address's ``address_key`` (one normaliser for suppression, erasure and preferences). The consumer
reads them before a send; the public unsubscribe page writes them; the console shows them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

__all__ = [
    "HowChanged",
    "Preference",
    "PreferenceChange",
    "PreferenceStore",
    "UnsubscribeLinks",
    "how_text",
    "may_be_refused",
    "unsubscribed_detail",
]


class HowChanged(StrEnum):
    ONE_CLICK = "one-click"  # RFC 8058 POST from the mailbox provider
    PAGE = "page"  # the page the link opens: its undo (a re-subscribe), unsubscribe, toggles
    SUPPORT = "support"  # a Support lead, at the recipient's request


_HOW_TEXT: dict[str, str] = {
    HowChanged.ONE_CLICK.value: "one-click, from the mail client",
    HowChanged.PAGE.value: "from the link",
    HowChanged.SUPPORT.value: "by Support, the recipient asked",
}


def how_text(how: str) -> str:
    """How a change was made, in the console's words (an unknown value as itself)."""
    return _HOW_TEXT.get(how, how)


@dataclass(frozen=True)
class Preference:
    address: str  # the address_key
    category: str  # the slug
    subscribed: bool
    how: str  # a HowChanged value
    at: int  # epoch seconds of the change
    label: str = ""  # the category's label when it was changed (for the journal's words)


@dataclass(frozen=True)
class PreferenceChange:
    """One kept change of an (address, category): the store's history, newest first."""

    category: str
    subscribed: bool
    how: str  # a HowChanged value
    at: int  # epoch seconds


def may_be_refused(*, category: str, priority: str) -> bool:
    """Whether a recipient's preference may hold this mail: categorised, and not critical."""
    return bool(category) and priority != "critical"


def unsubscribed_detail(preference: Preference, date_text: str) -> str:
    """The journal's words for a send the preference held back."""
    label = preference.label or preference.category
    return f"unsubscribed from {label} on {date_text} ({preference.how})"


class PreferenceStore(Protocol):
    def get(self, address: str, category: str) -> Preference | None:
        """The address's preference for the category (the address in any spelling)."""
        ...

    def of_address(self, address: str) -> list[Preference]:
        """Every category's preference of the address."""
        ...

    def set(self, preference: Preference) -> None:
        """Write (replace) the address's preference for ``preference.category``."""
        ...

    def remove_address(self, address: str) -> int:
        """Delete every preference of the address (erasure): how many."""
        ...


class UnsubscribeLinks(Protocol):
    def url(self, *, address: str, category: str, organization: str | None) -> str | None:
        """The one-click URL (an encrypted token) for (address, category); None when no public
        base URL is set (then no List-Unsubscribe header is added)."""
        ...
