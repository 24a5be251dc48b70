"""Delivery webhooks (Standard Webhooks): the events we tell producers about, their ids, their
payloads (built from the journal row), the endpoint filters, the retry schedule, the signing and
the destination (SSRF) check. Pure: the outbox, the HTTP client and the resolver are passed in.

An event is emitted (``WebhookOutbox.emit``) only after the journal's conditional write that
records its fact succeeded, so a duplicate SES event or a redelivered record emits nothing. The
event carries only the row's key and the event's own facts; the payload is built from the row
when it is delivered, so emitting costs no journal read.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, NotRequired, Protocol, cast, get_args, get_type_hints
from urllib.parse import urlsplit

from standardwebhooks.webhooks import Webhook
from typing_extensions import TypedDict  # pydantic reads typing's only from Python 3.12

from emailops.core.delivery_events import DeliveryEvent, EventType
from emailops.core.errors import PermanentError
from emailops.core.journal_row import JournalRow

__all__ = [
    "EVENT_TYPES",
    "NullOutbox",
    "WebhookEvent",
    "WebhookFilter",
    "WebhookOutbox",
    "WebhookPayload",
    "WebhookRefused",
    "body_of",
    "check_destination",
    "event_from_delivery",
    "failed_event",
    "new_secret",
    "not_delivered_event",
    "payload",
    "retry_delay",
    "retryable",
    "sent_event",
    "sign",
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

# Delivery: retried on these, with exponential back-off and jitter, for about three days.
RETRY_BASE_SECONDS = 30
RETRY_CAP_SECONDS = 6 * 3600
RETRY_WINDOW_SECONDS = 3 * 86400


class WebhookRefused(PermanentError):
    """An endpoint URL we will not post to (scheme, or where its host resolves)."""


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


class WebhookOutbox(Protocol):
    def emit(self, event: WebhookEvent) -> None:
        """Hand the event to delivery; cheap, never raises (a lost event is logged)."""
        ...


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


# --- The payload's type ---------------------------------------------------------------------
# What ``payload`` returns, one shape per event type (``type`` tells them apart). The JSON Schema
# in docs/webhooks.schema.json and the OpenAPI document's ``webhooks`` are generated from these
# (api/webhook_schema.py); a field added to ``payload`` or to an event's facts belongs here too.


class WebhookData(TypedDict):
    """What every event says about its journal row (one email to one recipient)."""

    journalKey: str
    """The journal row's Id: the same for every event of this email to this recipient."""
    messageId: str
    """The request's messageId (which template); empty if the row could not be read."""
    recipient: str
    """The recipient's address; empty if the row could not be read."""
    organization: str | None
    """The request's organizationId (as in custom/O{id}/), or null for none."""
    producer: str
    """Who wrote the row: an API token's namespace (api:<token id>), or empty for the queue."""
    dedupeId: str
    """The request's dedupeId, where known; empty otherwise."""
    templateVersion: str
    """The template version the email was rendered from; empty before it was sent."""
    status: str
    """The row's status when the payload was built (QUEUED, SENT, FAILED, SUPPRESSED...)."""
    sentAt: str
    """When SES accepted the email (RFC 3339), or empty."""
    occurredAt: str
    """When this event happened (RFC 3339, UTC); the same as the payload's timestamp."""
    contextKeys: NotRequired[list[str]]
    """The request context's key names, sorted (never their values); only for endpoints that
    opted in (include context keys)."""


class WebhookSesData(WebhookData):
    """An event SES reported about the email."""

    sesMessageId: str
    """SES's MessageId of the email."""
    sesEventId: str
    """The SES event's identity (the same event redelivered has the same one)."""


class WebhookSentData(WebhookData):
    sesMessageId: str
    """SES's MessageId of the email."""


class WebhookBouncedData(WebhookSesData):
    bounceType: str
    """SES's bounceType: Permanent, Transient or Undetermined."""
    bounceSubtype: str
    """SES's bounceSubType (General, NoEmail, MailboxFull...)."""
    hard: bool
    """A permanent (hard) bounce: the address is suppressed."""
    diagnostic: str
    """The receiving server's diagnostic code, if SES had one; else empty."""


class WebhookComplainedData(WebhookSesData):
    complaintType: str
    """SES's complaintFeedbackType (abuse, fraud...), or empty when the report gave none."""


class WebhookDelayedData(WebhookSesData):
    delayType: str
    """SES's delayType (MailboxFull, TransientCommunicationFailure...)."""


class WebhookRejectedData(WebhookSesData):
    reason: str
    """Why SES rejected the email (e.g. Bad content)."""


class WebhookFailedData(WebhookData):
    """Sending failed (the row is FAILED), or SES could not render the email."""

    error: str
    """The failure, in one line."""
    errorKind: str
    """Which failure: an exception class name, or RenderingFailure from SES."""
    permanent: bool | None
    """Whether retrying cannot help; null when unknown."""
    sesMessageId: NotRequired[str]
    """SES's MessageId (a rendering failure only)."""
    sesEventId: NotRequired[str]
    """The SES event's identity (a rendering failure only)."""


class WebhookNotDeliveredData(WebhookData):
    reason: str
    """Why the row was recorded and never sent (a send control: log-only)."""


class WebhookClickedData(WebhookSesData):
    link: str
    """The link the recipient followed."""


class WebhookBody(TypedDict):
    """What every payload has beside its ``type`` and ``data``."""

    timestamp: str
    """When the event happened (RFC 3339, UTC where we made it, as SES wrote it otherwise)."""


class EmailSent(WebhookBody):
    """SES accepted the email."""

    type: Literal["email.sent"]
    data: WebhookSentData


class EmailDelivered(WebhookBody):
    """The receiving server accepted the email."""

    type: Literal["email.delivered"]
    data: WebhookSesData


class EmailBounced(WebhookBody):
    """The email bounced (hard: suppressed; soft: transient)."""

    type: Literal["email.bounced"]
    data: WebhookBouncedData


class EmailComplained(WebhookBody):
    """The recipient marked the email as spam."""

    type: Literal["email.complained"]
    data: WebhookComplainedData


class EmailRejected(WebhookBody):
    """SES rejected the email after accepting it (e.g. a virus)."""

    type: Literal["email.rejected"]
    data: WebhookRejectedData


class EmailDelayed(WebhookBody):
    """SES could not deliver yet and keeps trying."""

    type: Literal["email.delayed"]
    data: WebhookDelayedData


class EmailFailed(WebhookBody):
    """Sending failed, or SES could not render the email."""

    type: Literal["email.failed"]
    data: WebhookFailedData


class EmailNotDelivered(WebhookBody):
    """Recorded and never sent (log-only)."""

    type: Literal["email.not_delivered"]
    data: WebhookNotDeliveredData


class EmailOpened(WebhookBody):
    """The recipient opened the email (open tracking)."""

    type: Literal["email.opened"]
    data: WebhookSesData


class EmailClicked(WebhookBody):
    """The recipient followed a link (click tracking)."""

    type: Literal["email.clicked"]
    data: WebhookClickedData


WebhookPayload = (
    EmailSent
    | EmailDelivered
    | EmailBounced
    | EmailComplained
    | EmailRejected
    | EmailDelayed
    | EmailFailed
    | EmailNotDelivered
    | EmailOpened
    | EmailClicked
)
"""The body an endpoint receives: one of these, told apart by ``type``. ``timestamp`` is when
the event happened (RFC 3339)."""

# EVENT_TYPES, in the same order, from the shapes: each event type has exactly one.
PAYLOAD_TYPES: dict[str, type] = {
    get_args(get_type_hints(t)["type"])[0]: t for t in get_args(WebhookPayload)
}


def payload(
    event: WebhookEvent,
    row: JournalRow | None,
    *,
    organization: str | None,
    context_keys: bool = False,
) -> WebhookPayload:
    """The body an endpoint receives (its shape: ``WebhookPayload``). Context values are never included (they may hold secrets
    and personal data); the context's key names only when the endpoint opts in."""
    data: dict[str, Any] = {
        "journalKey": event.journal_key,
        "messageId": row.message_id if row else "",
        "recipient": row.recipient if row else "",
        "organization": organization,
        "producer": row.producer if row else "",
        "dedupeId": row.dedupe_id if row else "",
        "templateVersion": row.template_version if row else "",
        "status": row.status if row else "",
        "sentAt": row.message_sent if row else "",
        "occurredAt": event.occurred_at,
        **{_camel(k): v for k, v in event.facts.items()},
    }
    if context_keys and row is not None:
        data["contextKeys"] = sorted(str(k) for k in row.context)
    return cast(WebhookPayload, {"type": event.type, "timestamp": event.occurred_at, "data": data})


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


@dataclass(frozen=True)
class WebhookFilter:
    """What one endpoint wants. Empty means any; ``producer`` is the row's producer (an API
    token's namespace, or "" for the queue), and a token's endpoint always carries its own."""

    event_types: frozenset[str] = frozenset()
    message_ids: frozenset[str] = frozenset()
    organization: str = ""
    producer: str | None = None

    def matches(self, event_type: str, row: JournalRow | None, organization: str | None) -> bool:
        if self.event_types and event_type not in self.event_types:
            return False
        if self.message_ids and (row is None or row.message_id not in self.message_ids):
            return False
        if self.organization and organization != self.organization:
            return False
        return self.producer is None or (row is not None and row.producer == self.producer)


def retryable(status: int | None) -> bool:
    """A timeout or connection failure (None), 429 or a 5xx is worth another attempt."""
    return status is None or status == 429 or status >= 500


def retry_delay(attempt: int, *, random: Callable[[], float]) -> float:
    """Seconds before attempt ``attempt + 1``: exponential, capped, with full jitter in its
    upper half (so a burst of failures does not come back all at once)."""
    ceiling = min(RETRY_CAP_SECONDS, RETRY_BASE_SECONDS * 2 ** max(attempt - 1, 0))
    return ceiling / 2 + random() * ceiling / 2


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def sign(event_id: str, timestamp: datetime, body: str, secrets_: Iterable[str]) -> dict[str, str]:
    """Standard Webhooks headers; several secrets (a rotation's overlap) sign side by side."""
    signatures = " ".join(Webhook(s).sign(event_id, timestamp, body) for s in secrets_)
    return {
        "webhook-id": event_id,
        "webhook-timestamp": str(int(timestamp.timestamp())),
        "webhook-signature": signatures,
        "content-type": "application/json",
    }


def body_of(data: Mapping[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"), sort_keys=True)


Resolver = Callable[[str, int], list[str]]


def check_destination(
    url: str, *, resolve: Resolver, allow_loopback: bool, require_https: bool
) -> list[str]:
    """The addresses ``url``'s host resolves to, or WebhookRefused: a scheme other than https
    (http only where allowed), or any address that is private, loopback (unless allowed),
    link-local, reserved or multicast. Checked at creation and again before every delivery."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookRefused("check webhook URL", key=url, reason="not an http(s) URL")
    if parts.scheme == "http" and require_https:
        raise WebhookRefused("check webhook URL", key=url, reason="HTTPS is required")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        addresses = resolve(parts.hostname, port)
    except OSError as exc:
        raise WebhookRefused(
            "check webhook URL", key=url, reason=f"does not resolve: {exc}"
        ) from None
    if not addresses:
        raise WebhookRefused("check webhook URL", key=url, reason="does not resolve")
    for text in addresses:
        address = ipaddress.ip_address(text.split("%")[0])
        if address.is_loopback:
            if allow_loopback:
                continue
            raise WebhookRefused("check webhook URL", key=url, reason=f"{address} is loopback")
        if (
            address.is_private
            or address.is_link_local
            or address.is_reserved
            or address.is_multicast
            or address.is_unspecified
        ):
            raise WebhookRefused(
                "check webhook URL", key=url, reason=f"{address} is a private address"
            )
    if parts.scheme == "http" and not all(ipaddress.ip_address(a).is_loopback for a in addresses):
        raise WebhookRefused("check webhook URL", key=url, reason="http only to loopback")
    return addresses
