"""The webhook payload: the body an endpoint receives (``WebhookPayload``, one shape per event type,
which docs/webhooks.schema.json is generated from) and ``payload()``, built from the journal row
when the event is delivered. Pure."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, cast, get_args, get_type_hints

from typing_extensions import TypedDict  # pydantic reads typing's only from Python 3.12

from emailops.core.journal_row import JournalRow
from emailops.core.webhooks import WebhookEvent

__all__ = ["PAYLOAD_TYPES", "WebhookPayload", "payload"]


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
