"""One webhook event (a fact about one journal row, with the id a receiver dedupes on), and an
event waiting in the durable outbox. Its own module, importing nothing: the journal's port
(``core.ports``) names it, and ``core.webhooks`` (which makes events) sits above the ports."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PendingEvent", "WebhookEvent"]


@dataclass(frozen=True)
class WebhookEvent:
    """One fact about one journal row, to tell the endpoints that want it. ``id`` is the same
    for the same (row, event), so a retry or a replay carries the id a receiver dedupes on."""

    id: str
    type: str
    journal_key: str
    occurred_at: str  # RFC 3339, UTC
    facts: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "journal_key": self.journal_key,
            "occurred_at": self.occurred_at,
            "facts": dict(self.facts),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WebhookEvent:
        return cls(
            id=data["id"],
            type=data["type"],
            journal_key=data["journal_key"],
            occurred_at=data["occurred_at"],
            facts=dict(data.get("facts") or {}),
        )


@dataclass(frozen=True)
class PendingEvent:
    """An event in the durable outbox, not yet fanned out, and when it was written."""

    event: WebhookEvent
    created_at: float  # epoch seconds
