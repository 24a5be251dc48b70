"""The journal table (``JOURNAL_TABLE``): one row per (message, recipient), keyed by the dedupe key.

Attributes are those the Go consumer writes (Id, MessageId, Recipient, Status, Timestamp, SentAtKey,
MessageSent, SesMessageId, Error, Context, ExpiresAt) plus ours: ClaimExpiresAt, Attempts, Subject,
TemplateKey, TemplateVersion (which published version of TemplateKey was rendered), RecipientKey (the
recipient's ``address_key``: every spelling of a mailbox finds its rows, for the search and erasure;
rows written before it was lowercased only), on rows the send API wrote, Producer (which
token wrote it: ``api:<token id>``, also the prefix of the row's key), and ExtraSends: sends made
after their claim was lost (``{SesMessageId, Attempt, At}``), so the journal shows every email SES
accepted for the row even when another consumer's send is the one marked.

A row must stay under DynamoDB's 400 KB: the producer's context is stored whole up to
``MAX_CONTEXT_BYTES``; beyond that its largest top-level values are replaced by
``"[trimmed: N bytes]"`` and ``ContextTrimmed`` holds the original size (the request itself, on the
queue, is untouched). Delivery events are capped on their side (``journal_events``).

Every rule that guards against a double send sits in a conditional write, never in a read-then-write.
A claim is one conditional UpdateItem rather than a PutItem so that ``Attempts`` can count claims:
the counter also identifies *our* claim when we mark the row afterwards.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from emailops.aws.dynamo import conditional_call, get_item
from emailops.aws.journal_codec import (
    LEASE_ENDED,
    LEASE_NAMES,
    attribute_value,
    failure_attributes,
    from_dynamo,
    item_from_dynamo,
    lease_values,
    logged_only_attributes,
    rfc3339,
    row_from_item,
    sent_attributes,
    stored_row,
    to_dynamo,
)
from emailops.aws.journal_context import MAX_CONTEXT_BYTES, bounded_context, sent_at_key
from emailops.core.contract import address_key
from emailops.core.errors import ForeignRow
from emailops.core.journal_row import JournalRow
from emailops.core.log_only import LogOnlyReason
from emailops.core.ports import Claim, ClaimResult, ClaimState, Status
from emailops.core.stored_attributes import StoredRow

if TYPE_CHECKING:
    from emailops.aws.webhook_outbox import DynamoWebhookOutbox
    from emailops.core.webhooks import WebhookEvent

__all__ = [
    "MAX_CONTEXT_BYTES",
    "DynamoJournal",
    "bounded_context",
    "from_dynamo",
    "item_from_dynamo",
    "sent_at_key",
    "to_dynamo",
]

_MAX_ERROR = 4000  # characters of an Error attribute

# A row is ours to take when nobody has it, its last attempt failed, or its claim's lease ended
# (LeasePolicy.stuck, as LEASE_ENDED with the claim's lease_values).
_CLAIMABLE = (
    f"attribute_not_exists(#id) OR #status = :failed OR (#status = :queued AND {LEASE_ENDED})"
)
# Every update that must not create a row says attribute_exists(Id): an UpdateItem on a missing key
# would otherwise write a row holding only what it sets (and its Id).
_EXISTS = "attribute_exists(#id)"
_OURS = f"{_EXISTS} AND #status = :queued AND #attempts = :attempt"
_NAMES = {
    "#id": "Id",
    "#status": "Status",
    **LEASE_NAMES,
    "#attempts": "Attempts",
    "#err": "Error",
    "#producer": "Producer",
    "#lo": "LoggedOnly",
    "#lor": "LoggedOnlyReason",
    "#ses": "SesMessageId",
}
# Every write also finds the row absent or its writer's own: an SQS dedupeId that mimics an API key
# cannot take that producer's row, nor one token another's. Queue (and Go-era) rows have no Producer.
_OWNED = "(attribute_not_exists(#id) OR #producer = :producer)"
_UNOWNED = "attribute_not_exists(#producer)"


_av = attribute_value


def _remove_unknown_facts(failure: dict[str, Any]) -> str:
    """A row taken over from an earlier attempt keeps none of that attempt's failure facts."""
    stale = [name for name in ("ErrorKind", "Permanent") if name not in failure]
    return f"REMOVE {', '.join(stale)}" if stale else ""


class DynamoJournal:
    """The journal's writes for the pipeline, and single-row reads. With ``outbox`` (the durable
    webhook outbox) a write given ``events`` stores them with its update in one transaction."""

    def __init__(
        self, client: Any, table: str, *, outbox: DynamoWebhookOutbox | None = None
    ) -> None:
        self.client = client
        self.table = table
        self.outbox = outbox

    def _row_values(self, claim: Claim, status: Status) -> dict[str, Any]:
        context, trimmed = bounded_context(claim.context)
        row = {
            "MessageId": claim.message_id,
            "Recipient": claim.recipient,
            "RecipientKey": address_key(claim.recipient),
            "Status": status.value,
            "Timestamp": claim.now,
            "SentAtKey": sent_at_key(claim.now),
            "Context": context,
            "ExpiresAt": claim.now + claim.ttl_seconds,
            "Subject": claim.subject,
            "TemplateKey": claim.template_key,
            "TemplateVersion": claim.template_version,
        }
        return (
            row
            | ({"Producer": claim.producer} if claim.producer else {})
            | ({"DedupeId": claim.dedupe_id} if claim.dedupe_id else {})
            | ({"ContextTrimmed": trimmed} if trimmed else {})
        )

    def _conditional_update(
        self,
        key: str,
        *,
        sets: dict[str, Any],
        condition: str,
        values: dict[str, Any],
        extra: str = "",
        what: str,
        events: Sequence[WebhookEvent] = (),
        **kwargs: Any,
    ) -> dict[str, Any] | ClientError:
        """One conditional UpdateItem (with ``events`` and an outbox: the same update and the
        events' items in one TransactWriteItems). Returns the response, or the
        ConditionalCheckFailed error."""
        names = dict(_NAMES)
        exprs = []
        attr_values = {f":{k}": _av(v) for k, v in values.items()}
        for i, (attr, value) in enumerate(sets.items()):
            names[f"#a{i}"] = attr
            attr_values[f":a{i}"] = _av(value)
            exprs.append(f"#a{i} = :a{i}")
        update = f"SET {', '.join(exprs)} {extra}" if exprs else extra
        used = set(re.findall(r"#\w+", update + " " + condition))
        call = {
            "Key": {"Id": {"S": key}},
            "UpdateExpression": update,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {k: v for k, v in names.items() if k in used},
            "ExpressionAttributeValues": attr_values,
        }
        if events and self.outbox is not None:
            update_item = {"TableName": self.table, **call, **kwargs}
            return self.outbox.write_with(update_item, events, now=time.time(), what=what, key=key)
        return conditional_call(self.client, self.table, "update_item", what, key, **call, **kwargs)

    def _claim_values(self, claim: Claim) -> dict[str, Any]:
        return (
            {"failed": Status.FAILED.value, "queued": Status.QUEUED.value}
            | lease_values(claim.lease, now=claim.now)
            | ({"producer": claim.producer} if claim.producer else {})
        )

    @staticmethod
    def _claimable(claim: Claim) -> str:
        return f"({_CLAIMABLE}) AND {_OWNED if claim.producer else _UNOWNED}"

    def claim(self, claim: Claim) -> ClaimResult:
        sets = self._row_values(claim, Status.QUEUED) | {"ClaimExpiresAt": claim.lease_ends_at}
        result = self._conditional_update(
            claim.key,
            sets=sets,
            condition=self._claimable(claim),
            values=self._claim_values(claim) | {"one": 1},
            extra="ADD #attempts :one REMOVE MessageSent, SesMessageId, #err, ErrorKind, Permanent",
            what="claim journal row",
            ReturnValues="UPDATED_NEW",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        if isinstance(result, dict):
            return ClaimResult(
                ClaimState.CLAIMED, attempt=int(result["Attributes"]["Attempts"]["N"])
            )
        current = result.response.get("Item") and item_from_dynamo(result.response["Item"])
        if not current:  # a store that does not return the old item: look it up
            current = self.get(claim.key) or {}
        if current.get("Producer", "") != claim.producer:
            raise ForeignRow(
                "claim journal row", key=claim.key, reason="the row belongs to another producer"
            )
        # A SUPPRESSED row is as final as a SENT one: that request is never sent to that address.
        if current.get("Status") in (Status.SENT.value, Status.SUPPRESSED.value):
            return ClaimResult(ClaimState.ALREADY_SENT)
        lease_end = claim.lease.ends_at(row_from_item(current))
        if lease_end is None:  # the row does not say when it was claimed: as if just now
            lease_end = claim.lease_ends_at
        return ClaimResult(ClaimState.IN_PROGRESS, lease_ends_at=lease_end)

    def mark_sent(
        self,
        key: str,
        *,
        attempt: int,
        provider_id: str,
        sent_at: int,
        events: Sequence[WebhookEvent] = (),
    ) -> bool:
        result = self._conditional_update(
            key,
            sets=sent_attributes(provider_id, sent_at=sent_at),
            # Or already ours and SENT with this very send: a retried call whose first reply was
            # lost (the write landed) is the same mark, not a lost lease.
            condition=(
                f"{_EXISTS} AND ((#status = :queued AND #attempts = :attempt) OR "
                "(#status = :sent AND #attempts = :attempt AND #ses = :ses))"
            ),
            values={
                "queued": Status.QUEUED.value,
                "sent": Status.SENT.value,
                "attempt": attempt,
                "ses": provider_id,
            },
            what="mark journal row SENT",
            events=events,
        )
        return isinstance(result, dict)

    def mark_failed(
        self,
        key: str,
        *,
        attempt: int,
        error: str,
        kind: str = "",
        permanent: bool | None = None,
        events: Sequence[WebhookEvent] = (),
    ) -> bool:
        failure = failure_attributes(error[:_MAX_ERROR], kind=kind, permanent=permanent)
        result = self._conditional_update(
            key,
            sets={"Status": Status.FAILED.value} | failure,
            condition=_OURS,
            values={"queued": Status.QUEUED.value, "attempt": attempt},
            what="mark journal row FAILED",
            events=events,
        )
        return isinstance(result, dict)

    def mark_accepted(
        self, key: str, *, provider_id: str, sent_at: int, events: Sequence[WebhookEvent] = ()
    ) -> bool:
        # No claim fence on purpose: SES accepted this send, so the row is SENT whoever holds it.
        result = self._conditional_update(
            key,
            sets=sent_attributes(provider_id, sent_at=sent_at),
            condition=f"{_EXISTS} AND #status <> :sent",
            values={"sent": Status.SENT.value},
            extra="REMOVE #err, ErrorKind, Permanent",
            what="mark journal row SENT (earlier send)",
            events=events,
        )
        return not isinstance(result, ClientError)

    def note_extra_send(self, key: str, *, attempt: int, provider_id: str, sent_at: int) -> None:
        # No claim fence on purpose (the claim is lost), and nothing but the list is touched: the
        # row's Status and SesMessageId stay with whoever holds it now.
        entry = {"SesMessageId": provider_id, "Attempt": attempt, "At": rfc3339(sent_at)}
        self._conditional_update(
            key,
            sets={},
            condition=_EXISTS,
            values={"entry": [entry], "none": []},
            extra="SET ExtraSends = list_append(if_not_exists(ExtraSends, :none), :entry)",
            what="note a send after the claim was lost",
        )

    def extend_claim(self, key: str, *, attempt: int, until: int) -> bool:
        result = self._conditional_update(
            key,
            sets={"ClaimExpiresAt": until},
            condition=_OURS,
            values={"queued": Status.QUEUED.value, "attempt": attempt},
            what="extend journal claim",
        )
        return isinstance(result, dict)

    def release_claim(self, key: str, *, attempt: int) -> bool:
        result = self._conditional_update(
            key,
            sets={"ClaimExpiresAt": 0},
            condition=_OURS,
            values={"queued": Status.QUEUED.value, "attempt": attempt},
            what="release journal claim",
        )
        return isinstance(result, dict)

    def record_failure(
        self,
        claim: Claim,
        *,
        error: str,
        kind: str = "",
        permanent: bool | None = None,
        events: Sequence[WebhookEvent] = (),
    ) -> bool:
        failure = failure_attributes(error[:_MAX_ERROR], kind=kind, permanent=permanent)
        return self._record(claim, Status.FAILED, failure, "record FAILED journal row", events)

    def record_logged_only(
        self,
        claim: Claim,
        *,
        reason: LogOnlyReason,
        detail: str,
        events: Sequence[WebhookEvent] = (),
    ) -> bool:
        attributes = logged_only_attributes(reason.value, detail[:_MAX_ERROR], at=claim.now)
        return self._record(claim, Status.SENT, attributes, "record a log-only journal row", events)

    def record_suppressed(
        self, claim: Claim, *, reason: str, events: Sequence[WebhookEvent] = ()
    ) -> bool:
        failure = failure_attributes(reason[:_MAX_ERROR], kind="Suppressed", permanent=True)
        return self._record(
            claim, Status.SUPPRESSED, failure, "record SUPPRESSED journal row", events
        )

    def _record(
        self,
        claim: Claim,
        status: Status,
        failure: dict[str, Any],
        what: str,
        events: Sequence[WebhookEvent],
    ) -> bool:
        """A whole row for a recipient that is not sent, on the claim's own condition."""
        result = self._conditional_update(
            claim.key,
            sets=self._row_values(claim, status) | failure,
            condition=self._claimable(claim),
            values=self._claim_values(claim),
            extra=_remove_unknown_facts(failure),
            what=what,
            events=events,
        )
        return isinstance(result, dict)

    def get(self, key: str) -> dict[str, Any] | None:
        """The row as plain Python keyed by attribute name, or None."""
        item = get_item(self.client, self.table, "Id", key, what="read journal row")
        return item_from_dynamo(item) if item else None

    def read(self, key: str) -> JournalRow | None:
        """The row (``JournalReader``), or None."""
        item = self.get(key)
        return row_from_item(item) if item else None

    def read_stored(self, key: str) -> StoredRow | None:
        """The row and its attributes as stored (``JournalReader``), or None."""
        item = self.get(key)
        return stored_row(item) if item else None

    def release_logged_only(self, key: str, *, reasons: tuple[str, ...], by: str, why: str) -> bool:
        """Make a log-only row (of one of ``reasons``) claimable again, for a Support lead's
        release: FAILED, as both consumers claim it, with who released it and why kept on the
        row. False when the row is not such a row (already released, sent, another reason)."""
        wanted = ", ".join(f":r{i}" for i in range(len(reasons)))
        result = self._conditional_update(
            key,
            sets={"Status": Status.FAILED.value, "ReleasedBy": by, "ReleaseReason": why},
            condition=(f"{_EXISTS} AND #status = :sent AND #lo = :yes AND #lor IN ({wanted})"),
            values={"sent": Status.SENT.value, "yes": True}
            | {f"r{i}": reason for i, reason in enumerate(reasons)},
            extra="REMOVE #lo, #lor, LoggedOnlyDetail, MessageSent",
            what="release a log-only journal row",
        )
        return isinstance(result, dict)
