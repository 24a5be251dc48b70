"""Delivery webhooks (Standard Webhooks): the events we tell producers about and their ids, and the
outbox port that hands them to delivery. Their payloads are ``core.webhook_payload``'s; the endpoint
filters, retry schedule, signing and destination (SSRF) check ``core.webhook_delivery``'s. Pure:
the outbox, the HTTP client and the resolver are passed in.

An event is written with its fact: the journal's conditional write that records the fact takes
the event too (``events=``), and the adapter stores both in one transaction (the durable outbox),
so a duplicate SES event or a redelivered record emits nothing and a journaled fact never loses
its event. ``WebhookOutbox.emit`` after the write only wakes delivery. The
event carries only the row's key and the event's own facts; the payload is built from the row
when it is delivered, so emitting costs no journal read.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any, Protocol

from emailops.core.delivery_events import DeliveryEvent, EventType
from emailops.core.webhook_event import PendingEvent, WebhookEvent

__all__ = [
    "EVENT_TYPES",
    "NullOutbox",
    "PendingEvent",
    "WebhookEvent",
    "WebhookOutbox",
    "WebhookOutboxStore",
    "event_from_delivery",
    "failed_event",
    "not_delivered_event",
    "sent_event",
]

EVENT_TYPES = (
    "email.sent",
    "email.delivered",
    "email.bounced",
    "email.complained",
    "email.rejected",
    "email.delayed",
    "email.failed",
    "email.not_delivered",
    "email.opened",
    "email.clicked",
)

_TYPE_OF = {
    EventType.DELIVERY: "email.delivered",
    EventType.BOUNCE: "email.bounced",
    EventType.COMPLAINT: "email.complained",
    EventType.REJECT: "email.rejected",
    EventType.DELIVERY_DELAY: "email.delayed",
    EventType.RENDERING_FAILURE: "email.failed",
    EventType.OPEN: "email.opened",
    EventType.CLICK: "email.clicked",
}


class WebhookOutbox(Protocol):
    def emit(self, event: WebhookEvent) -> None:
        """Wake delivery for an event the journal write stored beside its fact (the journal's
        ``events=``); cheap, never raises: a lost wake-up is the sweep's (``WebhookOutboxStore``)."""
        ...


class WebhookOutboxStore(Protocol):
    """The durable outbox as the webhook workers read it: an event stays until fanned out."""

    def delete(self, event_id: str) -> None: ...

    def pending(self, *, created_before: float, limit: int) -> list[PendingEvent]: ...


class NullOutbox:
    def emit(self, event: WebhookEvent) -> None:
        return None


def _event_id(journal_key: str, event_type: str, source_id: str) -> str:
    digest = hashlib.sha256(f"{journal_key}|{event_type}|{source_id}".encode()).hexdigest()
    return "evt_" + digest[:32]


def _rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def sent_event(journal_key: str, *, ses_message_id: str, sent_at: float) -> WebhookEvent:
    return WebhookEvent(
        id=_event_id(journal_key, "email.sent", ses_message_id),
        type="email.sent",
        journal_key=journal_key,
        occurred_at=_rfc3339(sent_at),
        facts={"ses_message_id": ses_message_id},
    )


def failed_event(
    journal_key: str, *, error: str, error_kind: str, permanent: bool | None, at: float
) -> WebhookEvent:
    # One FAILED mark per row attempt; the error identifies it across redeliveries.
    return WebhookEvent(
        id=_event_id(journal_key, "email.failed", error_kind or error),
        type="email.failed",
        journal_key=journal_key,
        occurred_at=_rfc3339(at),
        facts={"error": error, "error_kind": error_kind, "permanent": permanent},
    )


def not_delivered_event(journal_key: str, *, reason: str, at: float) -> WebhookEvent:
    """A log-only row (send controls): recorded, never sent."""
    return WebhookEvent(
        id=_event_id(journal_key, "email.not_delivered", reason),
        type="email.not_delivered",
        journal_key=journal_key,
        occurred_at=_rfc3339(at),
        facts={"reason": reason},
    )


def event_from_delivery(journal_key: str, event: DeliveryEvent) -> WebhookEvent | None:
    """The webhook event an applied SES event makes (None: one we do not publish, e.g. Send)."""
    kind = _TYPE_OF.get(event.type)
    if kind is None:
        return None
    facts: dict[str, Any] = {"ses_message_id": event.ses_message_id, "ses_event_id": event.event_id}
    if event.type is EventType.BOUNCE:
        facts |= {
            "bounce_type": event.bounce_type,
            "bounce_subtype": event.bounce_subtype,
            "hard": event.bounce_type == "Permanent",
            "diagnostic": event.diagnostic_code,
        }
    elif event.type is EventType.COMPLAINT:
        facts["complaint_type"] = event.complaint_feedback_type
    elif event.type is EventType.DELIVERY_DELAY:
        facts["delay_type"] = event.delay_type
    elif event.type is EventType.REJECT:
        facts["reason"] = event.reject_reason
    elif event.type is EventType.RENDERING_FAILURE:
        facts |= {"error": event.failure_message, "error_kind": "RenderingFailure"}
        facts["permanent"] = True
    elif event.type is EventType.CLICK:
        facts["link"] = event.link
    return WebhookEvent(
        id=_event_id(journal_key, kind, event.event_id),
        type=kind,
        journal_key=journal_key,
        occurred_at=event.at,
        facts=facts,
    )
