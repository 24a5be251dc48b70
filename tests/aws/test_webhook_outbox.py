"""The durable webhook outbox on moto: an event is written in the same TransactWriteItems as the
journal fact it reports (both or neither), a failed condition is the same False as a plain
conditional write, other cancellations map to the core errors of their single-item codes, the
journal attributes are those of the plain write, and off writes no outbox item at all."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from emailops import container
from emailops.aws.dynamo import transact_conditional
from emailops.aws.journal import DynamoJournal
from emailops.aws.webhook_outbox import OUTBOX_TTL_SECONDS, DynamoWebhookOutbox, outbox_table
from emailops.core.delivery_handler import EventAction
from emailops.core.errors import PermanentError, TransientError
from emailops.core.webhooks import failed_event, not_delivered_event, sent_event
from tests.aws.test_journal import NOW, TABLE, claim, raw
from tests.core.test_delivery_events import SES_ID, envelope, ses_event
from tests.fakes import RecordingOutbox

OUTBOX = outbox_table(TABLE)


@pytest.fixture
def outbox(aws) -> DynamoWebhookOutbox:
    return DynamoWebhookOutbox(aws.dynamodb, OUTBOX)


@pytest.fixture
def journal(aws, outbox) -> DynamoJournal:
    return DynamoJournal(aws.dynamodb, TABLE, outbox=outbox)


def items(aws) -> dict[str, dict]:
    found = aws.dynamodb.scan(TableName=OUTBOX, ConsistentRead=True)["Items"]
    return {item["Id"]["S"]: item for item in found}


def test_the_table_is_named_after_the_journal_and_keeps_items_a_week(aws):
    assert OUTBOX == "email-journal-webhook-outbox"
    ttl = aws.dynamodb.describe_time_to_live(TableName=OUTBOX)["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "ExpiresAt"}
    assert OUTBOX_TTL_SECONDS == 7 * 86400


def test_a_mark_and_its_event_are_written_together(aws, journal):
    journal.claim(claim("k1"))
    event = sent_event("k1", ses_message_id="ses-1", sent_at=NOW)
    assert journal.mark_sent("k1", attempt=1, provider_id="ses-1", sent_at=NOW, events=(event,))
    (item,) = items(aws).values()
    assert item["Id"]["S"] == event.id
    assert json.loads(item["Event"]["S"]) == event.to_dict()
    assert item["JournalKey"]["S"] == "k1"
    created = int(item["CreatedAt"]["N"])
    assert int(item["ExpiresAt"]["N"]) == created + OUTBOX_TTL_SECONDS
    assert raw(aws, "k1")["Status"] == {"S": "SENT"}


def test_the_journal_attributes_are_those_of_the_plain_write(aws, journal):
    """The Go consumer reads these rows: the transaction must not change a single attribute."""
    plain = DynamoJournal(aws.dynamodb, TABLE)
    for key, writer in (("with-outbox", journal), ("plain", plain)):
        writer.claim(claim(key))
        event = sent_event(key, ses_message_id="ses-1", sent_at=NOW)
        assert writer.mark_sent(key, attempt=1, provider_id="ses-1", sent_at=NOW, events=(event,))
    with_outbox, without = raw(aws, "with-outbox"), raw(aws, "plain")
    assert {k: v for k, v in with_outbox.items() if k != "Id"} == {
        k: v for k, v in without.items() if k != "Id"
    }
    assert list(items(aws)) == [sent_event("with-outbox", ses_message_id="ses-1", sent_at=0).id]


def test_a_failed_condition_writes_neither_the_fact_nor_the_event(aws, journal):
    journal.claim(claim("k1"))
    event = sent_event("k1", ses_message_id="ses-1", sent_at=NOW)
    # Claim 2 is not ours (the lease was lost to another consumer's claim 2... here: no claim 2).
    assert not journal.mark_sent("k1", attempt=2, provider_id="ses-1", sent_at=NOW, events=(event,))
    failed = failed_event("k1", error="x", error_kind="TransientError", permanent=False, at=NOW)
    assert not journal.mark_failed("k1", attempt=2, error="x", events=(failed,))
    assert items(aws) == {}
    assert raw(aws, "k1")["Status"] == {"S": "QUEUED"}
    # A duplicate record of a SENT row: record_logged_only's claim condition fails, no event.
    assert journal.mark_sent("k1", attempt=1, provider_id="ses-1", sent_at=NOW)
    not_sent = not_delivered_event("k1", reason="send_mode", at=NOW)
    assert not journal.record_logged_only(
        claim("k1"), reason=_reason(), detail="log-only", events=(not_sent,)
    )
    assert items(aws) == {}


def _reason():
    from emailops.core.log_only import LogOnlyReason

    return next(iter(LogOnlyReason))


def test_a_retried_mark_writes_the_same_item_again(aws, journal):
    """A mark whose reply was lost is retried: the same event id, one item (no condition on
    the Put, so the retry never cancels the mark it repeats)."""
    journal.claim(claim("k1"))
    event = sent_event("k1", ses_message_id="ses-1", sent_at=NOW)
    for _ in range(2):
        assert journal.mark_sent("k1", attempt=1, provider_id="ses-1", sent_at=NOW, events=(event,))
    assert list(items(aws)) == [event.id]


def test_off_writes_no_outbox_item(aws):
    plain = DynamoJournal(aws.dynamodb, TABLE)  # WEBHOOK_OUTBOX=off: no outbox given
    plain.claim(claim("k1"))
    event = sent_event("k1", ses_message_id="ses-1", sent_at=NOW)
    assert plain.mark_sent("k1", attempt=1, provider_id="ses-1", sent_at=NOW, events=(event,))
    assert items(aws) == {}


def test_pending_is_what_is_older_oldest_first_and_delete_takes_it(aws, outbox):
    first = sent_event("k1", ses_message_id="a", sent_at=NOW)
    second = sent_event("k2", ses_message_id="b", sent_at=NOW)
    young = sent_event("k3", ses_message_id="c", sent_at=NOW)
    for event, at in ((second, NOW - 20), (first, NOW - 60), (young, NOW - 1)):
        aws.dynamodb.put_item(**outbox.put_item(event, now=at)["Put"])
    pending = outbox.pending(created_before=NOW - 5, limit=10)
    assert [(p.event, p.created_at) for p in pending] == [(first, NOW - 60), (second, NOW - 20)]
    assert [p.event.id for p in outbox.pending(created_before=NOW - 5, limit=1)] == [first.id]
    outbox.delete(first.id)
    assert set(items(aws)) == {second.id, young.id}


class _Cancelling:
    """A client whose transactions are cancelled for ``reasons`` (moto raises only some)."""

    def __init__(self, *reasons: dict) -> None:
        self.reasons = list(reasons)

    def transact_write_items(self, **kwargs):
        raise ClientError(
            {
                "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
                "CancellationReasons": self.reasons,
            },
            "TransactWriteItems",
        )


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("TransactionConflict", TransientError),
        ("ThrottlingError", TransientError),
        ("ProvisionedThroughputExceeded", TransientError),
        ("ValidationError", PermanentError),
        ("ItemCollectionSizeLimitExceeded", PermanentError),
    ],
)
def test_a_cancellation_is_the_error_of_its_single_item_code(code, error):
    client = _Cancelling({"Code": "None"}, {"Code": code, "Message": "why"})
    with pytest.raises(error) as raised:
        transact_conditional(client, [], "mark journal row SENT", "k1")
    assert raised.value.key == "k1"
    assert "why" in raised.value.describe()


def test_a_failed_condition_in_a_transaction_is_returned_like_a_conditional_write():
    old = {"Id": {"S": "k1"}, "Status": {"S": "SENT"}}
    client = _Cancelling({"Code": "ConditionalCheckFailed", "Item": old}, {"Code": "None"})
    answer = transact_conditional(client, [], "mark journal row SENT", "k1")
    assert isinstance(answer, ClientError)
    assert answer.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert answer.response["Item"] == old


def test_a_delivery_event_and_its_webhook_event_are_one_write(aws_events, settings):
    settings.WEBHOOK_OUTBOX = "durable"
    container.reset()
    adapters = container.current()
    adapters.__dict__["webhook_outbox"] = RecordingOutbox()  # the wake-up, recorded
    adapters.journal.claim(claim("journal-key-1", recipient="recipient@example.com"))
    assert adapters.journal.mark_sent("journal-key-1", attempt=1, provider_id=SES_ID, sent_at=NOW)
    handler = adapters.delivery_event_handler
    outcome = handler.handle(envelope(ses_event("delivery.json")))
    assert (outcome.action, outcome.result) == (EventAction.DELETE, "applied")
    (woken,) = adapters.webhook_outbox.events
    assert woken.type == "email.delivered"
    assert list(items(aws_events)) == [woken.id]
    adapters.webhook_outbox_store.delete(woken.id)
    # The same SES event again: a duplicate, no write, so no event and no item.
    handler.handle(envelope(ses_event("delivery.json"), message_id="sns-2"))
    assert len(adapters.webhook_outbox.events) == 1
    assert items(aws_events) == {}


def test_a_row_reconciled_by_its_events_gets_its_email_sent_once(aws_events, settings):
    """The send's reply was lost (the row stayed QUEUED, its claim ended): the Send event that
    reconciles the row to SENT stores its email.sent too, under the id the consumer's own mark
    would give it."""
    settings.WEBHOOK_OUTBOX = "durable"
    container.reset()
    adapters = container.current()
    adapters.__dict__["webhook_outbox"] = RecordingOutbox()
    adapters.journal.claim(claim("journal-key-1", recipient="recipient@example.com"))
    outcome = adapters.delivery_event_handler.handle(envelope(ses_event("send.json")))
    assert outcome.result == "applied"
    sent = sent_event("journal-key-1", ses_message_id=SES_ID, sent_at=NOW)
    assert list(items(aws_events)) == [sent.id]
    assert json.loads(items(aws_events)[sent.id]["Event"]["S"])["type"] == "email.sent"
