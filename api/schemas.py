"""The API's shapes for the OpenAPI document. Requests are *validated* by the core contract
(``parse_request``), the same code the consumer runs; ``EmailRequestDoc`` only describes it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ninja import Schema
from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from emailops.core.journal_row import JournalRow
from emailops.core.journal_words import claim_words, delivery_words, failure_words, row_state
from emailops.core.lease import LeasePolicy
from emailops.core.ports import Status


class RecipientDoc(Schema):
    email: str = Field(
        json_schema_extra={"format": "email"},
        description="An ASCII address. Repeats of one address in a request are sent once.",
    )
    name: str | None = Field(None, description="Display name, one line.")


class EmailRequestDoc(Schema):
    """The EmailRequest, exactly as producers put it on the queue."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "messageId": "dataset-publication-accepted",
                    "dedupeId": "publication-4711-accepted",
                    "recipients": [{"name": "Alice", "email": "alice@example.com"}],
                    "context": {
                        "organizationId": 367,
                        "datasetName": "My Dataset",
                        "reviewerName": "Bob",
                        "date": "2026-06-18",
                    },
                }
            ]
        }
    )

    messageId: str = Field(pattern=r"\S", description="Which email: a key of the templates table.")
    recipients: list[RecipientDoc] = Field(min_length=1)
    context: dict[str, Any] | None = Field(
        None,
        description="Template variables. `organizationId` (an integer, or a string of digits) "
        "selects branding; `subject` overrides the subject.",
    )
    dedupeId: str | None = Field(
        None,
        description="Makes the request idempotent: the journal row of each recipient is "
        "`{dedupeId}:{email}`. Without it the key is a hash of messageId, email and context.",
    )


class SendResultOut(Schema):
    recipient: str
    id: str = Field(description="The journal row's Id: `GET /api/v1/sends/{id}`.")
    status: str | None = Field(
        description="QUEUED, SENT, FAILED or SUPPRESSED; null when the recipient has no row "
        "(nothing was attempted)."
    )
    sesMessageId: str | None
    error: str | None


class SendOut(Schema):
    messageId: str
    results: list[SendResultOut]


class SendProblemOut(Schema):
    """The request went through the pipeline but not every recipient is SENT."""

    error: str
    messageId: str
    results: list[SendResultOut]


class ErrorOut(Schema):
    error: str
    field: str | None = Field(
        None, description="For bad input: the field at fault, e.g. `recipients[0].email`."
    )


class DeliveryOut(Schema):
    """What SES reported after accepting the email, in the console's words."""

    state: str = Field(
        description="delivered, bounced, complained, delayed, rejected, suppressed or no-report."
    )
    text: str = Field(description='One line, e.g. "bounced: mailbox does not exist".')
    bounce: str | None = Field(None, description='A bounce\'s type/subtype: "Permanent/General".')
    diagnostic: str | None = Field(
        None, description="The receiving server's reply, as SES gave it."
    )


class FailureOut(Schema):
    """A FAILED row's failure, as recorded when it failed."""

    kind: str | None = Field(description="Which failure; null on rows that do not record it.")
    permanent: bool | None = Field(
        description="Whether retrying cannot help; null when the row does not say (Go rows)."
    )
    text: str = Field(description="The console's headline for it.")


class TimelineEventOut(Schema):
    """One SES event on the row's timeline, oldest first."""

    Type: str
    At: str
    Id: str
    Summary: str


class ExtraSendOut(Schema):
    """A send SES accepted after its claim was lost (another consumer's send is the row's)."""

    SesMessageId: str
    Attempt: int
    At: str


class JournalRowOut(BaseModel):
    """A journal row under its stored attribute names (PascalCase, as the Go service writes
    them); context values under sensitive keys are masked. Built by ``journal_row_out`` from a
    JournalRow, field by field, with the row read as the console reads it (camelCase fields,
    added). ``Id`` to ``Context`` are always answered; every later attribute only when the row
    stores it (a Go row stores fewer)."""

    state: str = Field(
        description="The row in one word, as the console reads it: in-progress, stuck or claimed "
        "(QUEUED), failed, suppressed, or what SES reported (delivered, bounced, complained, "
        "delayed, rejected, no-report)."
    )
    stuck: bool = Field(description="QUEUED and its claim's lease has ended: nobody is sending it.")
    leaseEndsAt: int | None = Field(
        None, description="A QUEUED row's claim ends (or ended) then, epoch seconds."
    )
    stuckSince: str | None = Field(
        None, description="When a stuck row's lease ended (RFC 3339, UTC); null unless stuck."
    )
    delivery: DeliveryOut | None = None
    failure: FailureOut | None = None

    Id: str
    MessageId: str | None = None
    Recipient: str | None = None
    Status: str | None = None
    Timestamp: int | float | None = None
    SesMessageId: str | None = None
    Error: str | None = None
    Context: Any = None

    SentAtKey: str | None = None
    MessageSent: str | None = Field(None, description="When SES accepted it (RFC 3339).")
    DeliveryStatus: str | None = None
    DeliveryStatusAt: str | None = None
    BounceType: str | None = None
    BounceSubType: str | None = None
    DiagnosticCode: str | None = None
    Subject: str | None = None
    TemplateKey: str | None = None
    TemplateVersion: str | None = None
    RecipientKey: str | None = None
    ClaimExpiresAt: int | None = None
    Attempts: int | None = None
    ExpiresAt: int | None = None
    DeliveryEvents: list[TimelineEventOut] | None = None
    ErrorKind: str | None = None
    Permanent: bool | None = None
    BounceStatusCode: str | None = None
    ComplaintType: str | None = None
    ContextTrimmed: int | None = None
    DedupeId: str | None = None
    DeliveryEventCount: int | None = None
    DeliveryOrder: int | None = None
    ExtraSends: list[ExtraSendOut] | None = None
    LoggedOnly: bool | None = None
    LoggedOnlyDetail: str | None = None
    LoggedOnlyReason: str | None = None
    Producer: str | None = None

    @model_serializer(mode="wrap")
    def _as_stored(self, handler: SerializerFunctionWrapHandler):
        # An attribute the row does not store is not answered (not null): as when the API
        # answered the stored item itself. ``journal_row_out`` sets only those it stores. No
        # return type: annotated, it would replace the model's own OpenAPI schema.
        return {k: v for k, v in handler(self).items() if k in self.model_fields_set}


def _utc(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


def _delivery_out(row: JournalRow) -> DeliveryOut | None:
    words = delivery_words(row)
    if words is None:
        return None
    return DeliveryOut(
        state=words.state,
        text=words.text,
        bounce=words.bounce or None,
        diagnostic=words.diagnostic or None,
    )


def _failure_out(row: JournalRow) -> FailureOut | None:
    if row.status != Status.FAILED:
        return None
    text = failure_words(row).headline
    return FailureOut(kind=row.error_kind or None, permanent=row.permanent, text=text)


def _stored(row: JournalRow) -> dict[str, Any]:
    """The attributes answered only when stored, from the row's fields: JournalRow says "not
    stored" with None, "", 0 (a count), False (LoggedOnly) or () (a list); those are left out."""
    d = row.delivery
    timeline = [
        TimelineEventOut(Type=e.type, At=e.at, Id=e.id, Summary=e.summary) for e in row.timeline
    ]
    extra = [
        ExtraSendOut(SesMessageId=x.ses_message_id, Attempt=x.attempt, At=x.at)
        for x in row.extra_sends
    ]
    values: dict[str, Any] = {
        "SentAtKey": row.sent_at_key or None,
        "MessageSent": row.message_sent or None,
        "DeliveryStatus": d.status or None,
        "DeliveryStatusAt": d.at or None,
        "BounceType": d.bounce_type or None,
        "BounceSubType": d.bounce_subtype or None,
        "DiagnosticCode": d.diagnostic or None,
        "Subject": row.subject or None,
        "TemplateKey": row.template_key or None,
        "TemplateVersion": row.template_version or None,
        "RecipientKey": row.recipient_key or None,
        "ClaimExpiresAt": row.claim_expires_at,
        "Attempts": row.attempts or None,
        "ExpiresAt": row.expires_at,
        "DeliveryEvents": timeline or None,
        "ErrorKind": row.error_kind or None,
        "Permanent": row.permanent,
        "BounceStatusCode": d.status_code or None,
        "ComplaintType": d.complaint_type or None,
        "ContextTrimmed": row.context_trimmed or None,
        "DedupeId": row.dedupe_id or None,
        "DeliveryEventCount": d.event_count or None,
        "DeliveryOrder": d.order or None,
        "ExtraSends": extra or None,
        "LoggedOnly": row.logged_only or None,
        "LoggedOnlyDetail": row.logged_only_detail or None,
        "LoggedOnlyReason": row.logged_only_reason or None,
        "Producer": row.producer or None,
    }
    return {name: value for name, value in values.items() if value is not None}


def journal_row_out(
    row: JournalRow, *, context: Any, now: int, lease: LeasePolicy
) -> JournalRowOut:
    """The API's view of ``row``: the declared fields mapped from JournalRow's, one by one;
    ``context``: what the producer may see. The row is read by the one lease rule (``lease``,
    the container's) and worded by ``journal_words``, as on the console."""
    claim = claim_words(row, now=now, lease=lease)
    stuck = claim is not None and claim.state == "stuck"
    lease_ends_at = claim.lease_ends_at if claim else None
    return JournalRowOut(
        state=row_state(row, now=now, lease=lease),
        stuck=stuck,
        leaseEndsAt=lease_ends_at,
        stuckSince=_utc(lease_ends_at) if stuck and lease_ends_at is not None else None,
        delivery=_delivery_out(row),
        failure=_failure_out(row),
        Id=row.key,
        MessageId=row.message_id or None,
        Recipient=row.recipient or None,
        Status=row.status or None,
        Timestamp=row.timestamp,
        SesMessageId=row.ses_message_id or None,
        Error=row.error or None,
        Context=context,
        **_stored(row),
    )
