"""A journal row's attributes as stored, for the one place that lists them raw: the support view
(the detail page's "stored attributes", ``email_log``'s listing and ``--json``). The adapter reads
them (``JournalReader.read_stored``), puts them in reading order and says what each one is
(``AttributeRole``), so the pages spell out times and branding without knowing attribute names;
above the adapter a row is a ``JournalRow``, and this is only shown, never read for meaning."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from emailops.core.journal_row import JournalRow

__all__ = ["AttributeRole", "StoredAttribute", "StoredAttributes", "StoredRow"]


class AttributeRole(StrEnum):
    """What a stored attribute is, as far as showing it goes."""

    PLAIN = "plain"
    EPOCH = "epoch"  # epoch seconds: shown as a time too
    EXPIRY = "expiry"  # epoch seconds after which DynamoDB deletes the row (its TTL)
    CONTEXT = "context"  # the request's context: masked by key
    TIMELINE = "timeline"  # the delivery events, which the pages show as the timeline
    TEMPLATE_KEY = "template-key"  # which template: shown with its branding
    TEMPLATE_VERSION = "template-version"  # the published version it was rendered from
    EVENT_TIME = "event-time"  # an RFC 3339 time SES gave


@dataclass(frozen=True)
class StoredAttribute:
    name: str
    value: Any  # plain JSON-like Python, as stored
    role: AttributeRole = AttributeRole.PLAIN

    @property
    def is_time(self) -> bool:
        return self.role in (AttributeRole.EPOCH, AttributeRole.EXPIRY)


@dataclass(frozen=True)
class StoredAttributes:
    """Every attribute of one row, in reading order (the adapter's)."""

    items: tuple[StoredAttribute, ...] = ()

    def __iter__(self) -> Iterator[StoredAttribute]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def as_dict(self) -> dict[str, Any]:
        """Name → value in reading order: for a JSON listing."""
        return {item.name: item.value for item in self.items}


@dataclass(frozen=True)
class StoredRow:
    """One read of a row: the typed row, and its attributes as stored for the support view."""

    row: JournalRow
    attributes: StoredAttributes
