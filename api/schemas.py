"""The API's shapes for the OpenAPI document. Requests are *validated* by the core contract
(``parse_request``), the same code the consumer runs; ``EmailRequestDoc`` only describes it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ninja import Schema
from pydantic import BaseModel, ConfigDict, Field

from emailops.aws.journal_codec import ordered_attributes
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


class JournalRowOut(BaseModel):
    """A journal row, attributes as stored (PascalCase, as the Go service writes them); context
    values under sensitive keys are masked. Built by ``journal_row_out`` from a JournalRow, field
    by field, with the row read as the console reads it (camelCase fields, added).

    A plain pydantic model: ninja's ``Schema`` validates through attribute access, which drops
    the undeclared (extra) attributes this one carries."""

    model_config = ConfigDict(extra="allow")

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


def journal_row_out(
    row: JournalRow, *, context: Any, now: int, lease: LeasePolicy
) -> JournalRowOut:
    """The API's view of ``row``: the declared fields mapped from JournalRow's, then every other
    attribute as stored (the schema allows extras); ``context``: what the producer may see. The
    row is read by the one lease rule (``lease``, the container's) and worded by
    ``journal_words``, as on the console."""
    declared = set(JournalRowOut.model_fields)
    extras = {
        name: value
        for name, value in ordered_attributes(dict(row.attributes)).items()
        if name not in declared
    }
    claim = claim_words(row, now=now, lease=lease)
    stuck = claim is not None and claim.state == "stuck"
    lease_ends_at = claim.lease_ends_at if claim else None
    return JournalRowOut(
        **extras,
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
    )
