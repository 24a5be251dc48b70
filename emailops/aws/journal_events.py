"""SES delivery events on the journal, and the table of events that found no row.

An event adds these attributes to its journal row (see ``emailops.aws.journal`` for the others):

- ``DeliveryStatus`` DELIVERED | BOUNCED | COMPLAINED | DELAYED | REJECTED, ``DeliveryStatusAt``
  (SES's timestamp of the winning event), and for bounces ``BounceType``, ``BounceSubType`` and
  ``DiagnosticCode``;
- ``DeliveryEvents``: the timeline, oldest first by SES time, at most 50 maps
  ``{Type, At, Id, Summary}``, each Summary at most ``MAX_SUMMARY`` characters (a longer one, e.g.
  a click on a huge link, ends in ``[trimmed]``) so that the row stays under DynamoDB's 400 KB
  beside the request's context (itself capped, see ``emailops.aws.journal``);
- ``DeliveryOrder`` (rank * 10^14 + SES epoch ms of the winning event: one number to compare) and
  ``DeliveryEventCount`` (events applied; the optimistic-concurrency guard).

An event that would reconcile a row (below) while a consumer still holds a live claim on it waits
(the message is retried) rather than race that consumer's own SENT mark; "live" is the one lease
rule (``LeasePolicy.held``: a Go-era row's claim lasts the lease from its ``Timestamp``). The
live-claim check is in the write's condition too: a claim taken between the read and the write
fails the write, and the event is decided again on the fresh row.

The events of one email that the consumer holds at once are one conditional write
(``apply_events``), their rows read beforehand for the whole batch in one BatchGetItem
(``read_rows``): the write holds only if no other event was applied since the read
(``DeliveryEventCount``), and a reconciliation only if ``Status`` is still what was read. On a lost
race the row is read again and every event decided again, so ordering and dedupe never depend on
arrival order, on how events were grouped, or on two consumers interleaving.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws.clients import error_code, translate_error
from emailops.aws.journal_codec import (
    LEASE_NAMES,
    LEASE_NOT_HELD,
    lease_values,
    row_from_dynamo,
    sent_attributes,
)
from emailops.aws.journal_codec import attribute_value as _av
from emailops.aws.journal_search import SES_ID_INDEX
from emailops.core.contract import organization_id_of
from emailops.core.delivery_events import RANK, DeliveryEvent, timestamp_ms
from emailops.core.delivery_handler import ApplyResult
from emailops.core.errors import TransientError
from emailops.core.journal_row import JournalRow
from emailops.core.journal_words import bounce_status_code
from emailops.core.lease import LeasePolicy
from emailops.core.ports import Status
from emailops.core.webhooks import sent_event

if TYPE_CHECKING:
    from emailops.aws.webhook_outbox import DynamoWebhookOutbox
    from emailops.core.webhook_event import WebhookEvent

__all__ = [
    "MAX_SUMMARY",
    "MAX_TIMELINE",
    "DynamoEventJournal",
    "decide",
    "delivery_order",
    "merged_update",
]

MAX_TIMELINE = 50
MAX_SUMMARY = 1000  # characters: 50 entries stay under ~60 KB of the row's 400 KB
_MAX_FIELD = 200  # SES's own short fields (type, timestamp, bounce type)
_ORDER_SCALE = 10**14  # above any epoch-milliseconds value for millennia
_RECONCILABLE = (Status.QUEUED.value, Status.FAILED.value)
_READ = (
    "Id, #status, #ts, SesMessageId, ClaimExpiresAt, DeliveryEvents, DeliveryEventCount,"
    " DeliveryOrder, MessageId, Recipient, Context.organizationId"
)
_READ_NAMES = {"#status": "Status", "#ts": "Timestamp"}  # both reserved words


def _capped(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - len(" … [trimmed]")] + " … [trimmed]"


def delivery_order(event: DeliveryEvent) -> int:
    status = event.delivery_status
    return RANK[status] * _ORDER_SCALE + event.at_ms if status else 0


class DynamoEventJournal:
    """``lease``: the process's LeasePolicy, read when an event would reconcile a QUEUED row
    (is a consumer's claim on it live?). ``outbox``: the durable webhook outbox, written in the
    same transaction as the events' update (``apply_events``'s ``webhooks``)."""

    def __init__(
        self,
        client: Any,
        table: str,
        *,
        lease: LeasePolicy,
        attempts: int = 8,
        outbox: DynamoWebhookOutbox | None = None,
    ) -> None:
        self.client = client
        self.table = table
        self.lease = lease
        self.attempts = attempts
        self.outbox = outbox

    def _call(self, operation: str, what: str, key: str, **kwargs: Any) -> Any:
        try:
            return getattr(self.client, operation)(TableName=self.table, **kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc, what, key=key) from exc

    def find_row_key(self, event: DeliveryEvent) -> str | None:
        if event.journal_key:
            found = self._call(
                "get_item",
                "find journal row by key",
                event.journal_key,
                Key={"Id": {"S": event.journal_key}},
                ProjectionExpression="Id",
                ConsistentRead=True,
            ).get("Item")
            if found:
                return event.journal_key
        if event.ses_message_id:
            items = self._call(
                "query",
                "find journal row by SES message id",
                event.ses_message_id,
                IndexName=SES_ID_INDEX,
                KeyConditionExpression="SesMessageId = :id",
                ExpressionAttributeValues={":id": {"S": event.ses_message_id}},
                ProjectionExpression="Id",
                Limit=1,
            ).get("Items", [])
            if items:
                return items[0]["Id"]["S"]
        return None

    def read_rows(self, keys: Iterable[str]) -> dict[str, JournalRow | None]:
        """The rows of ``keys`` as ``apply_events`` reads them, with BatchGetItem (100 keys a
        call, strongly consistent); None for a key with no row."""
        wanted = list(dict.fromkeys(keys))
        rows: dict[str, JournalRow | None] = dict.fromkeys(wanted)
        for start in range(0, len(wanted), 100):
            request: dict[str, Any] = {
                self.table: {
                    "Keys": [{"Id": {"S": key}} for key in wanted[start : start + 100]],
                    "ProjectionExpression": _READ,
                    "ExpressionAttributeNames": _READ_NAMES,
                    "ConsistentRead": True,
                }
            }
            for _ in range(self.attempts):
                try:
                    found = self.client.batch_get_item(RequestItems=request)
                except (ClientError, BotoCoreError) as exc:
                    raise translate_error(exc, "read journal rows", key=wanted[start]) from exc
                for item in found.get("Responses", {}).get(self.table, []):
                    row = row_from_dynamo(item)
                    rows[row.key] = row
                request = found.get("UnprocessedKeys") or {}
                if not request:
                    break
            else:
                raise TransientError(
                    "read journal rows", key=wanted[start], reason="keys left unprocessed"
                )
        return rows

    def apply_event(
        self,
        key: str,
        event: DeliveryEvent,
        *,
        now: int,
        on_applied: Callable[[str, str | None], None] | None = None,
    ) -> ApplyResult:
        def applied(_: DeliveryEvent, message_id: str, organization: str | None) -> None:
            if on_applied is not None:
                on_applied(message_id, organization)

        return self.apply_events(key, [event], now=now, on_applied=applied)[0]

    def apply_events(
        self,
        key: str,
        events: Sequence[DeliveryEvent],
        *,
        now: int,
        row: JournalRow | None = None,
        on_applied: Callable[[DeliveryEvent, str, str | None], None] | None = None,
        webhooks: Callable[[DeliveryEvent], WebhookEvent | None] | None = None,
    ) -> list[ApplyResult]:
        """Apply ``events`` (one email's, any order) to the row in ONE conditional write; a result
        per event. ``row``: the row as ``read_rows`` read it (else it is read here). On a lost
        race the row is read again and every event decided again on it. ``webhooks``: the webhook
        event each applied event makes, stored with the write (the durable outbox)."""
        for _ in range(self.attempts):
            if row is None:
                item = self._call(
                    "get_item",
                    "read journal row",
                    key,
                    Key={"Id": {"S": key}},
                    ProjectionExpression=_READ,
                    ExpressionAttributeNames=_READ_NAMES,
                    ConsistentRead=True,
                ).get("Item")
                if not item:
                    return [ApplyResult.GONE] * len(events)
                row = row_from_dynamo(item)
            results = decide(row, events, now=now, lease=self.lease)
            fresh = [e for e, r in zip(events, results, strict=True) if r is ApplyResult.APPLIED]
            made = _webhook_events(key, row, fresh, webhooks) if webhooks else []
            if not fresh or self._write(key, row, fresh, now=now, webhooks=made):
                if on_applied is not None:
                    organization = organization_id_of(dict(row.context))
                    for event in fresh:
                        on_applied(event, row.message_id, organization)
                return results
            row = None  # someone else wrote since our read: read and decide again
        raise TransientError(
            "apply delivery event", key=key, reason="the row kept changing; will retry"
        )

    def _write(
        self,
        key: str,
        row: JournalRow,
        events: Sequence[DeliveryEvent],
        *,
        now: int,
        webhooks: Sequence[WebhookEvent] = (),
    ) -> bool:
        update = merged_update(row, events, now=now, lease=self.lease)
        if webhooks and self.outbox is not None:
            item = {"TableName": self.table, "Key": {"Id": {"S": key}}, **update}
            what = "apply delivery event"
            answer = self.outbox.write_with(item, webhooks, now=time.time(), what=what, key=key)
            return not isinstance(answer, ClientError)
        try:
            self.client.update_item(TableName=self.table, Key={"Id": {"S": key}}, **update)
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                return False
            raise translate_error(exc, "apply delivery event", key=key) from exc
        except BotoCoreError as exc:
            raise translate_error(exc, "apply delivery event", key=key) from exc
        return True


def _reconcilable(row: JournalRow, event: DeliveryEvent) -> bool:
    return event.proves_sent and row.status in _RECONCILABLE and not row.ses_message_id


def _webhook_events(
    key: str,
    row: JournalRow,
    events: Sequence[DeliveryEvent],
    webhooks: Callable[[DeliveryEvent], WebhookEvent | None],
) -> list[WebhookEvent]:
    """The webhook events the write of ``events`` stores: each event's, and, when the write
    reconciles the row to SENT (the send's reply was lost), its email.sent, under the id the
    consumer's own mark would give it (the SES message id), so it is never told twice."""
    made = [made for event in events if (made := webhooks(event))]
    proof = next((event for event in events if _reconcilable(row, event)), None)
    if proof is not None:
        at = timestamp_ms(proof.sent_at or proof.at) / 1000
        made.append(sent_event(key, ses_message_id=proof.ses_message_id, sent_at=at))
    return made


def decide(
    row: JournalRow, events: Sequence[DeliveryEvent], *, now: int, lease: LeasePolicy
) -> list[ApplyResult]:
    """What each event does to ``row``: APPLIED (to be written), DUPLICATE (on the timeline
    already, or earlier in ``events``), or CLAIMED (it would reconcile the row while a consumer's
    claim on it is live, ``LeasePolicy.held``: it waits for that consumer's own mark)."""
    seen = {entry.id for entry in row.timeline}
    results = []
    for event in events:
        if event.event_id in seen:
            results.append(ApplyResult.DUPLICATE)
        elif _reconcilable(row, event) and lease.held(row, now=now):
            results.append(ApplyResult.CLAIMED)
        else:
            seen.add(event.event_id)
            results.append(ApplyResult.APPLIED)
    return results


def merged_update(
    row: JournalRow, events: Sequence[DeliveryEvent], *, now: int, lease: LeasePolicy
) -> dict[str, Any]:
    """The UpdateItem arguments (expression, condition, names, values) that apply ``events``
    (distinct, none on the row yet) to ``row`` as read: the same end state as applying them one
    by one in any order. The timeline gains every event (SES time order, the latest 50 kept);
    the status is the highest ``delivery_order`` among the row's and the events' (a tie goes to
    the event, as it would one at a time); a row whose send reply was lost is reconciled by the
    first event that proves the send. The condition holds only if nothing was applied since the
    read (``DeliveryEventCount``) and, when reconciling, the row is still as read."""
    entries = [
        {
            "Type": _capped(event.raw_type, _MAX_FIELD),
            "At": _capped(event.at, _MAX_FIELD),
            "Id": event.event_id,
            "Summary": _capped(event.summary, MAX_SUMMARY),
        }
        for event in events
    ]
    timeline = [
        {"Type": e.type, "At": e.at, "Id": e.id, "Summary": e.summary} for e in row.timeline
    ]
    timeline = sorted([*timeline, *entries], key=lambda e: timestamp_ms(e.get("At", "")))
    count = row.delivery.event_count
    sets: dict[str, Any] = {
        "DeliveryEvents": timeline[-MAX_TIMELINE:],
        "DeliveryEventCount": count + len(events),
    }
    removes: list[str] = []
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    # attribute_exists(Id) always: an event must never create a row (it would hold only the
    # delivery attributes), even when the row vanished (TTL, erasure) since it was read.
    if count:
        conditions = ["attribute_exists(Id)", "DeliveryEventCount = :seen"]
        values[":seen"] = count
    else:
        conditions = ["attribute_exists(Id)", "attribute_not_exists(DeliveryEventCount)"]

    winner, order = None, row.delivery.order
    for event in events:  # ties: the later one, as applying them in this order would
        candidate = delivery_order(event)
        if candidate and candidate >= order:
            winner, order = event, candidate
    if winner is not None and winner.delivery_status is not None:
        sets |= {
            "DeliveryStatus": winner.delivery_status.value,
            "DeliveryStatusAt": _capped(winner.at, _MAX_FIELD),
            "DeliveryOrder": order,
        }
        if winner.bounce_type:
            sets |= {
                "BounceType": _capped(winner.bounce_type, _MAX_FIELD),
                "BounceSubType": _capped(winner.bounce_subtype, _MAX_FIELD),
            }
            if winner.diagnostic_code:
                sets["DiagnosticCode"] = _capped(winner.diagnostic_code, MAX_SUMMARY)
            else:
                removes.append("DiagnosticCode")
            if code := bounce_status_code(winner.diagnostic_code):
                sets["BounceStatusCode"] = code
            else:
                removes.append("BounceStatusCode")
        if winner.complaint_feedback_type:
            sets["ComplaintType"] = _capped(winner.complaint_feedback_type, _MAX_FIELD)

    # The lost-reply case: SES sent it but the consumer never learnt the SES id, so the row is
    # still QUEUED (or FAILED, from the timeout). Left so, its next claim would send it again.
    proof = min(
        (event for event in events if _reconcilable(row, event)),
        key=lambda event: timestamp_ms(event.sent_at or event.at),
        default=None,
    )
    if proof is not None:
        sent_at = timestamp_ms(proof.sent_at or proof.at) // 1000
        sets |= sent_attributes(proof.ses_message_id, sent_at=sent_at)
        removes += ["#err", "ErrorKind", "Permanent"]
        names["#err"] = "Error"
        names["#status"] = "Status"
        conditions += ["#status = :was", "attribute_not_exists(SesMessageId)"]
        values[":was"] = row.status
        if row.queued:  # nobody's claim may be live at the write (one taken since the read)
            names |= LEASE_NAMES
            conditions.append(LEASE_NOT_HELD)
            values |= {f":{k}": v for k, v in lease_values(lease, now=now).items()}

    update_names = {f"#s{i}": attr for i, attr in enumerate(sets)}
    update = "SET " + ", ".join(f"#s{i} = :s{i}" for i in range(len(sets)))
    if removes:
        update += " REMOVE " + ", ".join(removes)
    attr_values = {f":s{i}": _av(v) for i, v in enumerate(sets.values())}
    attr_values |= {k: _av(v) for k, v in values.items()}
    return {
        "UpdateExpression": update,
        "ConditionExpression": " AND ".join(conditions),
        "ExpressionAttributeNames": update_names | names,
        "ExpressionAttributeValues": attr_values,
    }
