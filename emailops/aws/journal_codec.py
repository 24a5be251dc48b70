"""The one codec between the journal table's DynamoDB items and ``JournalRow``.

Every journal adapter (writes, search, scan, events) reads rows through ``row_from_item`` and
serialises values through ``to_dynamo``/``attribute_value``; attribute names live here and in the
write expressions of ``emailops.aws.journal``, nowhere above the adapters.

Attributes we add to the Go service's rows (the Go consumer ignores them): ``ErrorKind`` (S, the
failure's kind, e.g. ``SendRejected``) and ``Permanent`` (BOOL, whether retrying cannot help),
written with ``Error``; ``BounceStatusCode`` (S, the bounce's enhanced status code, "5.1.1") beside
``BounceType``/``BounceSubType``/``DiagnosticCode``; ``ComplaintType`` (S) for complaints.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from emailops.core.journal_row import DeliveryState, ExtraSend, JournalRow, TimelineEntry
from emailops.core.lease import LeasePolicy
from emailops.core.ports import Status
from emailops.core.stored_attributes import (
    AttributeRole,
    StoredAttribute,
    StoredAttributes,
    StoredRow,
)

__all__ = [
    "ATTRIBUTE_ORDER",
    "CONTEXT_ATTRIBUTE",
    "LEASE_ENDED",
    "LEASE_NAMES",
    "LEASE_NOT_HELD",
    "TIMELINE_ATTRIBUTE",
    "attribute_value",
    "failure_attributes",
    "from_dynamo",
    "item_from_dynamo",
    "lease_values",
    "ordered_attributes",
    "rfc3339",
    "row_from_dynamo",
    "row_from_item",
    "sent_attributes",
    "stored_attributes",
    "stored_row",
    "to_dynamo",
]

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()

# LeasePolicy (emailops.core.lease) as DynamoDB conditions, its numbers from ``lease_values``. The
# lease ended (``stuck``: the claim's and the stuck-claims Scan's) when ClaimExpiresAt < :now, or,
# on a Go row (no ClaimExpiresAt), when Timestamp < :stale; no claim is live (``not held``: the
# events path's) also on a row that says neither.
LEASE_ENDED = "(#lease < :now OR (attribute_not_exists(#lease) AND #ts < :stale))"
LEASE_NOT_HELD = "(#lease < :now OR (attribute_not_exists(#lease) AND (attribute_not_exists(#ts) OR #ts < :stale)))"
LEASE_NAMES = {"#lease": "ClaimExpiresAt", "#ts": "Timestamp"}


def lease_values(lease: LeasePolicy, *, now: int) -> dict[str, int]:
    """``:now`` and ``:stale`` of LEASE_ENDED and LEASE_NOT_HELD under ``lease`` (without the colon)."""
    return {"now": now, "stale": lease.stale_before(now)}


def _number(value: int | float) -> Decimal | str:
    """DynamoDB numbers hold 38 digits within ±1e126; anything else is kept as its text."""
    number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if number != 0 and not (Decimal("1e-130") <= abs(number) < Decimal("1e126")):
        return repr(value)
    if len(number.as_tuple().digits) > 38:
        return _number(float(value))
    return number


def to_dynamo(value: Any) -> Any:
    """JSON-decoded data → what boto3's TypeSerializer accepts (floats become Decimals)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return _number(value) if math.isfinite(value) else repr(value)
    if isinstance(value, list | tuple):
        return [to_dynamo(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_dynamo(v) for k, v in value.items()}
    return str(value)


def from_dynamo(value: Any) -> Any:
    """Deserialized DynamoDB data → plain JSON-like Python (Decimals become int or float)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, list):
        return [from_dynamo(v) for v in value]
    if isinstance(value, dict):
        return {k: from_dynamo(v) for k, v in value.items()}
    if isinstance(value, set):
        return sorted(from_dynamo(v) for v in value)
    return value


def attribute_value(value: Any) -> dict[str, Any]:
    return _serializer.serialize(to_dynamo(value))


def item_from_dynamo(raw: dict[str, Any]) -> dict[str, Any]:
    """A DynamoDB item as plain Python keyed by attribute name."""
    item = {k: from_dynamo(_deserializer.deserialize(v)) for k, v in raw.items()}
    if isinstance(item.get("Context"), str):
        # We write Context as a map; a writer that stored it as JSON text reads back the same.
        try:
            context = json.loads(item["Context"])
        except ValueError:
            context = None
        if isinstance(context, dict):
            item["Context"] = context
    return item


def rfc3339(timestamp: int) -> str:
    """MessageSent's format (the Go consumer's): "2026-01-02T03:04:05Z"."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def sent_attributes(ses_message_id: str, *, sent_at: int) -> dict[str, Any]:
    """What a SENT mark writes: the pipeline's, an earlier send's, an event's reconciliation."""
    return {
        "Status": Status.SENT.value,
        "SesMessageId": ses_message_id,
        "MessageSent": rfc3339(sent_at),
    }


def failure_attributes(error: str, *, kind: str, permanent: bool | None) -> dict[str, Any]:
    """What a FAILED (or SUPPRESSED) mark writes: the text and, when known, the facts."""
    return (
        {"Error": error}
        | ({"ErrorKind": kind} if kind else {})
        | ({"Permanent": permanent} if permanent is not None else {})
    )


def logged_only_attributes(reason: str, detail: str, *, at: int) -> dict[str, Any]:
    """What a log-only row writes: the Go service's ``LoggedOnly`` + ``MessageSent`` (with
    ``Status`` SENT and no ``SesMessageId``), and why, which Go rows lack."""
    return {
        "LoggedOnly": True,
        "LoggedOnlyReason": reason,
        "LoggedOnlyDetail": detail,
        "MessageSent": rfc3339(at),
    }


# The journal's attributes in reading order (the Go consumer's, then ours); others follow, sorted.
ATTRIBUTE_ORDER = (
    "Id",
    "MessageId",
    "Recipient",
    "Status",
    "Timestamp",
    "SentAtKey",
    "MessageSent",
    "SesMessageId",
    "Error",
    "DeliveryStatus",
    "DeliveryStatusAt",
    "BounceType",
    "BounceSubType",
    "DiagnosticCode",
    "Subject",
    "TemplateKey",
    "TemplateVersion",
    "RecipientKey",
    "ClaimExpiresAt",
    "Attempts",
    "ExpiresAt",
    "Context",
    "DeliveryEvents",
    "ErrorKind",
    "Permanent",
    "BounceStatusCode",
    "ComplaintType",
)
CONTEXT_ATTRIBUTE = "Context"
TIMELINE_ATTRIBUTE = "DeliveryEvents"


def ordered_attributes(item: dict[str, Any]) -> dict[str, Any]:
    """A row's attributes in reading order (the Go consumer's, then ours; others sorted)."""
    known = {name: item[name] for name in ATTRIBUTE_ORDER if name in item}
    return known | {name: item[name] for name in sorted(item) if name not in known}


# What the support view needs to know of an attribute to show it (AttributeRole); others: PLAIN.
_ROLES = {
    "Timestamp": AttributeRole.EPOCH,
    "ClaimExpiresAt": AttributeRole.EPOCH,
    "ExpiresAt": AttributeRole.EXPIRY,
    CONTEXT_ATTRIBUTE: AttributeRole.CONTEXT,
    TIMELINE_ATTRIBUTE: AttributeRole.TIMELINE,
    "TemplateKey": AttributeRole.TEMPLATE_KEY,
    "TemplateVersion": AttributeRole.TEMPLATE_VERSION,
    "DeliveryStatusAt": AttributeRole.EVENT_TIME,
}


def stored_attributes(item: dict[str, Any]) -> StoredAttributes:
    """A plain item's attributes, in reading order, each with its role, for the support view."""
    return StoredAttributes(
        tuple(
            StoredAttribute(name, value, _ROLES.get(name, AttributeRole.PLAIN))
            for name, value in ordered_attributes(item).items()
        )
    )


def stored_row(item: dict[str, Any]) -> StoredRow:
    return StoredRow(row_from_item(item), stored_attributes(item))


def _text(item: dict[str, Any], name: str) -> str:
    value = item.get(name)
    return "" if value is None else str(value)


def _int(item: dict[str, Any], name: str) -> int | None:
    value = item.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _maps(value: Any) -> list[dict[str, Any]]:
    """The maps of a list attribute; anything else in it (or a non-list) is skipped."""
    return [entry for entry in value if isinstance(entry, dict)] if isinstance(value, list) else []


def _timeline(value: Any) -> tuple[TimelineEntry, ...]:
    return tuple(
        TimelineEntry(_text(e, "Type"), _text(e, "At"), _text(e, "Id"), _text(e, "Summary"))
        for e in _maps(value)
    )


def _extra_sends(value: Any) -> tuple[ExtraSend, ...]:
    return tuple(
        ExtraSend(_text(e, "SesMessageId"), _int(e, "Attempt") or 0, _text(e, "At"))
        for e in _maps(value)
    )


# JournalRow's and DeliveryState's text and number fields, and the attribute each is stored in.
_ROW_TEXT = {
    "key": "Id",
    "message_id": "MessageId",
    "recipient": "Recipient",
    "recipient_key": "RecipientKey",
    "sent_at_key": "SentAtKey",
    "status": "Status",
    "message_sent": "MessageSent",
    "ses_message_id": "SesMessageId",
    "error": "Error",
    "error_kind": "ErrorKind",
    "subject": "Subject",
    "template_key": "TemplateKey",
    "template_version": "TemplateVersion",
    "producer": "Producer",
    "dedupe_id": "DedupeId",
    "logged_only_reason": "LoggedOnlyReason",
    "logged_only_detail": "LoggedOnlyDetail",
}
_ROW_NUMBER = {
    "timestamp": "Timestamp",
    "claim_expires_at": "ClaimExpiresAt",
    "expires_at": "ExpiresAt",
}
_DELIVERY_TEXT = {
    "at": "DeliveryStatusAt",
    "bounce_type": "BounceType",
    "bounce_subtype": "BounceSubType",
    "diagnostic": "DiagnosticCode",
    "status_code": "BounceStatusCode",
    "complaint_type": "ComplaintType",
}


def row_from_item(item: dict[str, Any]) -> JournalRow:
    """A plain item (``item_from_dynamo``'s) as a JournalRow; any attribute may be missing."""
    permanent = item.get("Permanent")
    context = item.get(CONTEXT_ATTRIBUTE)
    delivery = {name: _text(item, attr) for name, attr in _DELIVERY_TEXT.items()}
    return JournalRow(
        **{name: _text(item, attr) for name, attr in _ROW_TEXT.items()},
        **{name: _int(item, attr) for name, attr in _ROW_NUMBER.items()},
        permanent=permanent if isinstance(permanent, bool) else None,
        attempts=_int(item, "Attempts") or 0,
        logged_only=item.get("LoggedOnly") is True,
        context=context if isinstance(context, dict) else {},
        context_trimmed=_int(item, "ContextTrimmed") or 0,
        delivery=DeliveryState(
            status=_text(item, "DeliveryStatus").upper(),
            order=_int(item, "DeliveryOrder") or 0,
            event_count=_int(item, "DeliveryEventCount") or 0,
            **delivery,
        ),
        timeline=_timeline(item.get(TIMELINE_ATTRIBUTE)),
        extra_sends=_extra_sends(item.get("ExtraSends")),
    )


def row_from_dynamo(raw: dict[str, Any]) -> JournalRow:
    return row_from_item(item_from_dynamo(raw))
