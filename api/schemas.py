"""The API's shapes for the OpenAPI document. Requests are *validated* by the core contract
(``parse_request``), the same code the consumer runs; ``EmailRequestDoc`` only describes it."""

from __future__ import annotations

from typing import Any

from ninja import Schema
from pydantic import ConfigDict, Field

from emailops.aws.journal_codec import ordered_attributes
from emailops.core.journal_row import JournalRow


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


class JournalRowOut(Schema):
    """A journal row, attributes as stored; context values under sensitive keys are masked.
    Built by ``journal_row_out`` from a JournalRow, field by field."""

    model_config = ConfigDict(extra="allow")

    Id: str
    MessageId: str | None = None
    Recipient: str | None = None
    Status: str | None = None
    Timestamp: int | float | None = None
    SesMessageId: str | None = None
    Error: str | None = None
    Context: Any = None


def journal_row_out(row: JournalRow, *, context: Any) -> JournalRowOut:
    """The API's view of ``row``: the declared fields mapped from JournalRow's, then every other
    attribute as stored (the schema allows extras); ``context``: what the producer may see."""
    declared = set(JournalRowOut.model_fields)
    extras = {
        name: value
        for name, value in ordered_attributes(dict(row.attributes)).items()
        if name not in declared
    }
    return JournalRowOut(
        **extras,
        Id=row.key,
        MessageId=row.message_id or None,
        Recipient=row.recipient or None,
        Status=row.status or None,
        Timestamp=row.timestamp,
        SesMessageId=row.ses_message_id or None,
        Error=row.error or None,
        Context=context,
    )
