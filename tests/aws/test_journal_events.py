"""Delivery events applied to journal rows on moto, through the real handler and adapters: every
event type, matching by tag or SES id, SES-time ordering, duplicates, unmatched and unknown events,
the lost-reply reconciliation and suppression."""

from __future__ import annotations

import copy
import json
import time

import pytest

from emailops import container
from emailops.aws.journal_events import MAX_SUMMARY, MAX_TIMELINE, DynamoEventJournal
from emailops.core.delivery_events import encode_journal_key, parse_envelope, parse_event
from emailops.core.delivery_handler import ApplyResult, EventAction
from emailops.core.errors import PermanentError
from emailops.core.lease import LeasePolicy
from tests.aws.test_journal import LEASE, NOW, claim, raw
from tests.core.test_delivery_events import SES_ID, envelope, ses_event

LEASE_POLICY = LeasePolicy(LEASE)  # the one the rows below are claimed with


KEY = "journal-key-1"  # what the fixtures' tag carries


@pytest.fixture
def handler(aws_events):
    return container.current().delivery_event_handler


def sent_row(key: str = KEY, ses_id: str = SES_ID) -> None:
    journal = container.current().journal
    journal.claim(claim(key, recipient="recipient@example.com"))
    assert journal.mark_sent(key, attempt=1, provider_id=ses_id, sent_at=NOW)


def row(aws, key: str = KEY) -> dict:
    return container.current().journal.get(key)


def at(event: dict, when: str) -> dict:
    """The event with its own SES timestamp moved to ``when``."""
    event = copy.deepcopy(event)
    kind = {"DeliveryDelay": "deliveryDelay"}.get(event["eventType"], event["eventType"].lower())
    event[kind]["timestamp"] = when
    return event


def untagged(event: dict) -> dict:
    event = copy.deepcopy(event)
    event["mail"].pop("tags", None)
    return event


STATUS = {
    "send.json": None,
    "delivery.json": "DELIVERED",
    "bounce.json": "BOUNCED",
    "complaint.json": "COMPLAINED",
    "delivery-delay.json": "DELAYED",
    "reject.json": "REJECTED",
    "rendering-failure.json": None,
    "open.json": None,
    "click.json": None,
    "subscription.json": None,
}


@pytest.mark.parametrize("name", list(STATUS))
def test_every_event_type_lands_on_its_row(aws_events, handler, name):
    sent_row()
    event = ses_event(name)
    outcome = handler.handle(envelope(event))
    assert (outcome.action, outcome.result) == (EventAction.DELETE, "applied")
    current = row(aws_events)
    assert current.get("DeliveryStatus") == STATUS[name]
    [entry] = current["DeliveryEvents"]
    assert entry["Type"] == event["eventType"]
    assert entry["Id"] == outcome.event.event_id
    assert entry["Summary"] == outcome.event.summary
    if STATUS[name]:
        assert current["DeliveryStatusAt"] == outcome.event.at
    assert current["Status"] == "SENT"


def test_a_bounce_records_type_subtype_and_diagnostic_and_suppresses(aws_events, handler):
    sent_row()
    handler.handle(envelope(ses_event("bounce.json")))
    current = row(aws_events)
    assert current["DeliveryStatus"] == "BOUNCED"
    assert (current["BounceType"], current["BounceSubType"]) == ("Permanent", "General")
    assert current["DiagnosticCode"] == "smtp; 550 5.1.1 user unknown"
    entry = container.current().suppression_list.get("Recipient@Example.com")
    assert entry.reason == "bounce" and "mailbox does not exist" in entry.detail
    assert entry.source == SES_ID


def test_a_complaint_suppresses_and_a_soft_bounce_does_not(aws_events, handler):
    sent_row()
    handler.handle(json.dumps(ses_event("bounce-transient.json")))
    assert container.current().suppression_list.get("recipient@example.com") is None
    handler.handle(json.dumps(ses_event("complaint.json")))
    assert container.current().suppression_list.get("recipient@example.com").reason == "complaint"


def test_matched_by_ses_message_id_without_a_tag(aws_events, handler):
    sent_row("go-row-key")
    outcome = handler.handle(json.dumps(ses_event("legacy-bounce-notification.json")))
    assert outcome.result == "applied"
    assert row(aws_events, "go-row-key")["DeliveryStatus"] == "BOUNCED"


def test_a_bounce_always_wins_over_a_delivery_whatever_the_order(aws_events, handler):
    sent_row()
    bounce = at(ses_event("bounce.json"), "2017-08-05T00:41:02.669Z")
    delivery = at(ses_event("delivery.json"), "2017-08-05T00:41:09.000Z")  # later, but loses
    handler.handle(json.dumps(bounce))
    handler.handle(json.dumps(delivery))
    current = row(aws_events)
    assert current["DeliveryStatus"] == "BOUNCED"
    assert current["DeliveryStatusAt"] == "2017-08-05T00:41:02.669Z"
    assert [e["Type"] for e in current["DeliveryEvents"]] == ["Bounce", "Delivery"]


def test_a_late_delay_never_overrides_delivery(aws_events, handler):
    sent_row()
    delivery = at(ses_event("delivery.json"), "2020-06-16T00:20:00.000Z")
    delay = at(ses_event("delivery-delay.json"), "2020-06-16T00:25:40.095Z")
    handler.handle(json.dumps(delivery))
    handler.handle(json.dumps(delay))
    assert row(aws_events)["DeliveryStatus"] == "DELIVERED"


def test_delay_then_delivery_arriving_out_of_order(aws_events, handler):
    sent_row()
    delay = at(ses_event("delivery-delay.json"), "2020-06-16T00:10:00.000Z")
    delivery = at(ses_event("delivery.json"), "2020-06-16T00:20:00.000Z")
    handler.handle(json.dumps(delivery))  # arrives first
    handler.handle(json.dumps(delay))
    current = row(aws_events)
    assert current["DeliveryStatus"] == "DELIVERED"
    # The timeline is in SES time, not arrival order.
    assert [e["Type"] for e in current["DeliveryEvents"]] == ["DeliveryDelay", "Delivery"]


def test_among_equal_ranks_the_later_ses_time_wins(aws_events, handler):
    sent_row()
    complaint = at(ses_event("complaint.json"), "2017-08-05T00:50:00.000Z")
    bounce = at(ses_event("bounce.json"), "2017-08-05T00:41:02.669Z")
    handler.handle(json.dumps(complaint))
    handler.handle(json.dumps(bounce))  # earlier in SES time: the complaint stays
    assert row(aws_events)["DeliveryStatus"] == "COMPLAINED"


def test_duplicates_are_applied_once(aws_events, handler):
    sent_row()
    event = ses_event("bounce.json")
    first = handler.handle(envelope(event, message_id="sns-1"))
    again = handler.handle(envelope(event, message_id="sns-1"))  # SQS redelivery
    republished = handler.handle(json.dumps(event))  # the same event, raw
    assert [o.result for o in (first, again, republished)] == ["applied", "duplicate", "duplicate"]
    current = row(aws_events)
    assert len(current["DeliveryEvents"]) == 1
    assert current["DeliveryEventCount"] == 1


def test_unmatched_events_wait_once_then_are_stored(aws_events, handler):
    event = untagged(ses_event("delivery.json"))
    event["mail"]["messageId"] = "no-such-ses-id"
    first = handler.handle(json.dumps(event), receive_count=1)
    assert first.action is EventAction.RETRY
    second = handler.handle(json.dumps(event), receive_count=2)
    assert (second.action, second.result) == (EventAction.DELETE, "stored")
    stored = container.current().unmatched_events.get(second.event.event_id)
    assert stored["Reason"] == "no journal row"
    assert stored["SesMessageId"] == "no-such-ses-id"
    assert json.loads(stored["Raw"]) == event
    assert stored["ExpiresAt"] > stored["ReceivedAt"]


def test_an_unmatched_hard_bounce_still_suppresses(aws_events, handler):
    event = untagged(ses_event("bounce.json"))
    event["mail"]["messageId"] = "sent-by-someone-else"
    handler.handle(json.dumps(event), receive_count=2)
    assert container.current().suppression_list.get("recipient@example.com") is not None


def test_unknown_event_types_are_stored(aws_events, handler):
    outcome = handler.handle(envelope(ses_event("legacy-subscription-succeeded.json")))
    assert (outcome.action, outcome.result) == (EventAction.DELETE, "stored")
    stored = container.current().unmatched_events.get(outcome.event.event_id)
    assert stored["Reason"] == "unknown event type"
    assert stored["EventType"] == "AmazonSnsSubscriptionSucceeded"


def test_bad_messages_are_dead_lettered(aws_events, handler):
    assert handler.handle("not json").action is EventAction.DEAD_LETTER
    assert handler.handle(envelope({}, Message="{oops")).action is EventAction.DEAD_LETTER


# --- the lost reply -------------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["QUEUED", "FAILED"])
def test_a_row_whose_send_reply_was_lost_is_reconciled_to_sent(aws_events, handler, status):
    journal = container.current().journal
    journal.claim(claim(KEY, recipient="recipient@example.com"))
    if status == "FAILED":
        journal.mark_failed(KEY, attempt=1, error="send email: ReadTimeoutError")
    outcome = handler.handle(envelope(ses_event("send.json")))  # found by the tag alone
    assert outcome.result == "applied"
    item = raw(aws_events, KEY)
    assert item["Status"] == {"S": "SENT"}
    assert item["SesMessageId"] == {"S": SES_ID}
    assert item["MessageSent"] == {"S": "2016-10-14T05:02:16Z"}
    assert "Error" not in item
    # ...so the next delivery of the request is a duplicate, not a second email.
    assert journal.claim(claim(KEY, now=NOW + 10_000)).state.value == "already-sent"


def test_an_event_waits_while_the_sending_consumer_still_holds_its_claim(aws_events, handler):
    now = int(time.time())
    journal = container.current().journal
    journal.claim(claim(KEY, recipient="recipient@example.com", now=now))  # live for LEASE s
    outcome = handler.handle(envelope(ses_event("delivery.json")))
    assert outcome.action is EventAction.RETRY and "live claim" in outcome.reason
    assert "DeliveryEvents" not in row(aws_events)
    # The consumer's own mark lands; the retried event then only adds to the timeline.
    assert journal.mark_sent(KEY, attempt=1, provider_id="ses-own", sent_at=now)
    assert handler.handle(envelope(ses_event("delivery.json"))).result == "applied"
    current = row(aws_events)
    assert (current["SesMessageId"], current["DeliveryStatus"]) == ("ses-own", "DELIVERED")


@pytest.mark.parametrize(("age", "waits"), [(LEASE // 2, True), (10 * LEASE, False)])
def test_a_go_rows_lost_reply_waits_while_its_claim_lasts_by_the_one_lease(
    aws_events, handler, age, waits
):
    """A Go-era QUEUED row has no ClaimExpiresAt: its claim lasts the lease (the queue's
    visibility timeout here) from its Timestamp, for the events path as for the consumer."""
    from tests.journal_factory import journal_row, put_rows

    at = int(time.time()) - age
    go_row = journal_row("recipient@example.com", at=at, status="QUEUED", go_row=True, key=KEY)
    put_rows(aws_events.dynamodb, "email-journal", [go_row])

    outcome = handler.handle(envelope(ses_event("send.json")))

    if waits:
        assert outcome.action is EventAction.RETRY and "live claim" in outcome.reason
        assert row(aws_events)["Status"] == "QUEUED"
    else:
        assert outcome.result == "applied" and row(aws_events)["SesMessageId"] == SES_ID


def test_reconciliation_never_touches_a_sent_row(aws_events, handler):
    sent_row(ses_id="the-real-one")
    handler.handle(envelope(ses_event("delivery.json")))
    assert row(aws_events)["SesMessageId"] == "the-real-one"


def test_a_rendering_failure_does_not_reconcile(aws_events, handler):
    container.current().journal.claim(claim(KEY, recipient="recipient@example.com"))
    handler.handle(envelope(ses_event("rendering-failure.json")))
    assert row(aws_events)["Status"] == "QUEUED"


# --- the write itself -----------------------------------------------------------------------------


def test_the_timeline_keeps_the_latest_fifty_in_ses_time(aws_events, handler):
    sent_row()
    for i in range(MAX_TIMELINE + 5):
        opened = at(ses_event("open.json"), f"2017-08-09T22:{i // 60:02d}:{i % 60:02d}.000Z")
        assert handler.handle(json.dumps(opened)).result == "applied"
    timeline = row(aws_events)["DeliveryEvents"]
    assert len(timeline) == MAX_TIMELINE
    assert timeline[0]["At"] == "2017-08-09T22:00:05.000Z"
    assert timeline == sorted(timeline, key=lambda e: e["At"])


class RacingJournal(DynamoEventJournal):
    """Lets another consumer apply ``rival`` between our read and our write, once."""

    def __init__(self, client, table, rival):
        super().__init__(client, table, lease=LEASE_POLICY)
        self.rival = rival
        self.races = 0

    def _write(self, key, row, events, **kwargs):
        if self.rival is not None:
            rival, self.rival = self.rival, None
            rival_journal = DynamoEventJournal(self.client, self.table, lease=LEASE_POLICY)
            assert rival_journal.apply_event(key, rival, now=NOW) is ApplyResult.APPLIED
            self.races += 1
        return super()._write(key, row, events, **kwargs)


def parsed(body: str):
    return parse_event(*parse_envelope(body))


def test_a_lost_race_is_decided_again_on_fresh_data(aws_events):
    sent_row()
    delivery = parsed(json.dumps(at(ses_event("delivery.json"), "2017-08-05T00:41:09.000Z")))
    bounce = parsed(json.dumps(ses_event("bounce.json")))
    racing = RacingJournal(aws_events.dynamodb, "email-journal", rival=bounce)
    assert racing.apply_event(KEY, delivery, now=NOW) is ApplyResult.APPLIED
    assert racing.races == 1
    current = row(aws_events)
    assert current["DeliveryStatus"] == "BOUNCED"  # the delivery did not overwrite it
    assert {e["Type"] for e in current["DeliveryEvents"]} == {"Bounce", "Delivery"}
    assert current["DeliveryEventCount"] == 2


def test_a_vanished_row_is_gone(aws_events):
    journal = container.current().event_journal
    send = parsed(json.dumps(ses_event("send.json")))
    assert journal.apply_event("no-such-row", send, now=NOW) is ApplyResult.GONE
    assert raw(aws_events, "no-such-row") == {}


class ClaimingJournal(DynamoEventJournal):
    """Lets a consumer claim the row (its lease had ended) between our read and our write."""

    def __init__(self, client, table, *, now):
        super().__init__(client, table, lease=LEASE_POLICY)
        self.now = now
        self.claims = 0

    def _write(self, key, row, events, **kwargs):
        if not self.claims:
            self.claims += 1
            result = container.current().journal.claim(
                claim(key, recipient="recipient@example.com", now=self.now)
            )
            assert result.state.value == "claimed"
        return super()._write(key, row, events, **kwargs)


def test_a_claim_taken_between_read_and_write_keeps_the_row_from_reconciling(aws_events):
    """The live-claim check is part of the write's condition, not only of the read before it."""
    journal = container.current().journal
    journal.claim(claim(KEY, recipient="recipient@example.com"))  # its lease ends at NOW + LEASE
    later = NOW + 10 * LEASE
    racing = ClaimingJournal(aws_events.dynamodb, "email-journal", now=later)
    send = parsed(json.dumps(ses_event("send.json")))
    assert racing.apply_event(KEY, send, now=later) is ApplyResult.CLAIMED
    current = row(aws_events)
    assert current["Status"] == "QUEUED" and "SesMessageId" not in current
    assert current["Attempts"] == 2  # the new claim stands; its consumer marks the row itself


# --- a row stays under DynamoDB's 400 KB --------------------------------------------------------


def clicks(count: int, link_bytes: int) -> list[str]:
    bodies = []
    for i in range(count):
        click = at(ses_event("click.json"), f"2017-08-09T23:{i // 60:02d}:{i % 60:02d}.000Z")
        click["click"]["link"] = f"https://example.com/{i}/" + "x" * link_bytes
        bodies.append(json.dumps(click))
    return bodies


def test_event_summaries_are_capped_so_the_timeline_cannot_outgrow_the_row(aws_events, handler):
    sent_row()
    for body in clicks(MAX_TIMELINE + 2, 20_000):  # 50 uncapped summaries: ~1 MB
        assert handler.handle(body).result == "applied"
    timeline = row(aws_events)["DeliveryEvents"]
    assert len(timeline) == MAX_TIMELINE
    assert all(len(e["Summary"]) <= MAX_SUMMARY for e in timeline)
    assert timeline[-1]["Summary"].endswith("[trimmed]")


def test_a_large_context_is_trimmed_so_the_row_fits_beside_a_full_timeline(aws_events, handler):
    journal = container.current().journal
    context = {"datasetName": "Mine", "blob": "y" * 250_000, "other": "z" * 120_000}
    journal.claim(claim(KEY, recipient="recipient@example.com", context=context))
    assert journal.mark_sent(KEY, attempt=1, provider_id=SES_ID, sent_at=NOW)
    for body in clicks(MAX_TIMELINE, 20_000):
        assert handler.handle(body).result == "applied"
    current = row(aws_events)
    assert current["Context"]["datasetName"] == "Mine"  # small values are kept as they were
    assert current["Context"]["blob"].startswith("[trimmed:")
    assert current["ContextTrimmed"] > 370_000  # the original size, in bytes


# --- a batch: rows read together, one email's events in one write ---------------------------------


class CountingClient:
    """The DynamoDB client, counting calls by operation and failing ``fail`` (operation → error)
    the first ``times`` times."""

    def __init__(self, client, *, fail: dict | None = None, times: int = 1) -> None:
        self.client = client
        self.calls: list[str] = []
        self.fail = fail or {}
        self.times = times

    def __getattr__(self, name):
        method = getattr(self.client, name)

        def call(**kwargs):
            self.calls.append(name)
            if name in self.fail and self.times > 0:
                self.times -= 1
                raise self.fail[name]
            return method(**kwargs)

        return call


def batch_handler(client):
    from emailops.core.delivery_handler import DeliveryEventHandler

    return DeliveryEventHandler(
        journal=DynamoEventJournal(client, "email-journal", lease=LEASE_POLICY),
        suppressions=container.current().suppression_list,
        unmatched=container.current().unmatched_events,
        verify=lambda envelope: None,
        clock=lambda: NOW,
    )


def test_one_emails_events_in_a_batch_are_one_write_with_each_distinct_event_once(aws_events):
    sent_row()
    client = CountingClient(aws_events.dynamodb)
    bounce = envelope(ses_event("bounce.json"), message_id="sns-b")
    bodies = [
        envelope(ses_event("delivery.json"), message_id="sns-d"),
        bounce,
        envelope(ses_event("send.json"), message_id="sns-s"),
        envelope(ses_event("bounce.json"), message_id="sns-b2"),  # SES said it twice
    ]
    outcomes = batch_handler(client).handle_batch([(body, 1) for body in bodies])
    assert [o.result for o in outcomes] == ["applied", "applied", "applied", "duplicate"]
    assert all(o.action is EventAction.DELETE for o in outcomes)
    assert client.calls == ["batch_get_item", "update_item"]  # one read, one write
    current = row(aws_events)
    assert current["DeliveryStatus"] == "BOUNCED"  # the bounce outranks the later delivery
    assert current["BounceType"] == "Permanent"
    assert [e["Type"] for e in current["DeliveryEvents"]] == ["Send", "Delivery", "Bounce"]
    assert current["DeliveryEventCount"] == 3
    assert container.current().suppression_list.get("recipient@example.com").reason == "bounce"
    # Redelivered later: duplicates, no write, and no second suppression.
    container.current().suppression_list.remove(
        "recipient@example.com"
    )  # lifted by an operator meanwhile
    client.calls.clear()
    again = batch_handler(client).handle_batch([(bounce, 2)])
    assert [o.result for o in again] == ["duplicate"]
    assert client.calls == ["batch_get_item"]
    assert container.current().suppression_list.get("recipient@example.com") is None


def test_a_merged_write_keeps_a_status_the_row_already_outranks(aws_events):
    sent_row()
    batch_handler(aws_events.dynamodb).handle_batch([(json.dumps(ses_event("complaint.json")), 1)])
    late = [
        at(ses_event("delivery.json"), "2017-08-05T00:59:00.000Z"),
        at(ses_event("delivery-delay.json"), "2017-08-05T00:59:30.000Z"),
        ses_event("open.json"),
    ]
    outcomes = batch_handler(aws_events.dynamodb).handle_batch(
        [(json.dumps(event), 1) for event in late]
    )
    assert [o.result for o in outcomes] == ["applied"] * 3
    current = row(aws_events)
    assert current["DeliveryStatus"] == "COMPLAINED"
    assert current["DeliveryEventCount"] == 4
    assert len(current["DeliveryEvents"]) == 4


def test_the_rows_of_a_batch_are_read_in_one_call_and_each_written_once(aws_events):
    for i in range(3):
        sent_row(f"row-{i}", ses_id=f"ses-{i}")
    bodies = []
    for i in range(3):
        for name in ("delivery.json", "open.json"):
            event = ses_event(name)
            event["mail"]["messageId"] = f"ses-{i}"
            event["mail"]["tags"]["emailops-journal-key"] = [encode_journal_key(f"row-{i}") or ""]
            bodies.append((json.dumps(event), 1))
    client = CountingClient(aws_events.dynamodb)
    outcomes = batch_handler(client).handle_batch(bodies)
    assert [o.result for o in outcomes] == ["applied"] * 6
    assert sorted(client.calls) == ["batch_get_item"] + ["update_item"] * 3
    for i in range(3):
        assert row(aws_events, f"row-{i}")["DeliveryEventCount"] == 2


def test_a_failed_merged_write_leaves_every_event_of_that_email_for_redelivery(aws_events):
    from botocore.exceptions import ClientError

    sent_row()
    sent_row("other-row", ses_id="ses-other")
    throttled = ClientError(
        {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}},
        "UpdateItem",
    )
    other = ses_event("delivery.json")
    other["mail"]["messageId"] = "ses-other"
    other["mail"]["tags"]["emailops-journal-key"] = [encode_journal_key("other-row") or ""]
    bodies = [json.dumps(ses_event("delivery.json")), json.dumps(ses_event("bounce.json"))]
    client = CountingClient(aws_events.dynamodb, fail={"update_item": throttled})
    outcomes = batch_handler(client).handle_batch([(b, 1) for b in [*bodies, json.dumps(other)]])
    # The first write (this email's two events) failed: both are retried, neither applied...
    assert [o.action for o in outcomes] == [
        EventAction.RETRY,
        EventAction.RETRY,
        EventAction.DELETE,
    ]
    assert "DeliveryEvents" not in row(aws_events)
    # ...while the other email's write went through, and the bounce's address is suppressed
    # already (suppression never waits for the journal).
    assert row(aws_events, "other-row")["DeliveryStatus"] == "DELIVERED"
    assert container.current().suppression_list.get("recipient@example.com") is not None
    # Redelivered, they apply.
    again = batch_handler(aws_events.dynamodb).handle_batch([(b, 2) for b in bodies])
    assert [o.result for o in again] == ["applied", "applied"]
    assert row(aws_events)["DeliveryStatus"] == "BOUNCED"


def test_a_permanent_error_in_a_merged_write_dead_letters_only_the_event_that_causes_it(
    aws_events,
):
    sent_row()

    class RefusingJournal(DynamoEventJournal):
        """Refuses any write that carries the open (say, it made the item too large)."""

        def _write(self, key, row, events, **kwargs):
            if any(e.raw_type == "Open" for e in events):
                raise PermanentError("apply delivery event", reason="item too large")
            return super()._write(key, row, events, **kwargs)

    handler = batch_handler(aws_events.dynamodb)
    handler.journal = RefusingJournal(aws_events.dynamodb, "email-journal", lease=LEASE_POLICY)
    names = ("delivery.json", "open.json", "send.json")
    outcomes = handler.handle_batch([(json.dumps(ses_event(n)), 1) for n in names])
    assert [o.action for o in outcomes] == [
        EventAction.DELETE,
        EventAction.DEAD_LETTER,
        EventAction.DELETE,
    ]
    assert [e["Type"] for e in row(aws_events)["DeliveryEvents"]] == ["Send", "Delivery"]


def test_a_merged_write_that_loses_a_race_is_decided_again_with_the_rivals_event_deduped(
    aws_events,
):
    """Another consumer applies the same bounce between our batch read and our write."""
    sent_row()
    bounce = parsed(json.dumps(ses_event("bounce.json")))
    handler = batch_handler(aws_events.dynamodb)
    racing = RacingJournal(aws_events.dynamodb, "email-journal", rival=bounce)
    handler.journal = racing
    bodies = [json.dumps(ses_event("bounce.json")), json.dumps(ses_event("delivery.json"))]
    outcomes = handler.handle_batch([(b, 1) for b in bodies])
    assert racing.races == 1
    assert [o.result for o in outcomes] == ["duplicate", "applied"]
    current = row(aws_events)
    assert current["DeliveryStatus"] == "BOUNCED"
    assert [e["Type"] for e in current["DeliveryEvents"]] == ["Delivery", "Bounce"]
    assert current["DeliveryEventCount"] == 2


def test_merging_ends_as_applying_one_by_one_in_any_order(aws_events):
    """The merged write's end state equals the one-at-a-time state, whatever the order."""
    import itertools

    names = ("send.json", "delivery.json", "delivery-delay.json", "bounce.json", "open.json")
    bodies = [json.dumps(ses_event(n)) for n in names]
    one_by_one = None
    for i, order in enumerate(itertools.permutations(bodies)):
        if i % 17:  # a spread of the 120 orders keeps this test quick
            continue
        key = f"perm-{i}"
        sent_row(key)
        events = [json.loads(b) for b in order]
        for event in events:
            event["mail"]["tags"]["emailops-journal-key"] = [encode_journal_key(key) or ""]
        batch_handler(aws_events.dynamodb).handle_batch([(json.dumps(e), 1) for e in events])
        current = row(aws_events, key)
        state = (
            current["DeliveryStatus"],
            current["DeliveryStatusAt"],
            current["BounceType"],
            [(e["Type"], e["At"]) for e in current["DeliveryEvents"]],
            current["DeliveryEventCount"],
        )
        if one_by_one is None:
            sent_row("one-by-one")
            for event in events:
                event["mail"]["tags"]["emailops-journal-key"] = [
                    encode_journal_key("one-by-one") or ""
                ]
                batch_handler(aws_events.dynamodb).handle_batch([(json.dumps(event), 1)])
            single = row(aws_events, "one-by-one")
            one_by_one = (
                single["DeliveryStatus"],
                single["DeliveryStatusAt"],
                single["BounceType"],
                [(e["Type"], e["At"]) for e in single["DeliveryEvents"]],
                single["DeliveryEventCount"],
            )
        assert state == one_by_one


def test_untagged_events_of_one_email_cost_one_lookup_and_one_write(aws_events):
    sent_row("go-row-key")
    bodies = [json.dumps(untagged(ses_event(n))) for n in ("delivery.json", "bounce.json")]
    client = CountingClient(aws_events.dynamodb)
    outcomes = batch_handler(client).handle_batch([(body, 1) for body in bodies])
    assert [o.result for o in outcomes] == ["applied", "applied"]
    assert client.calls == ["query", "get_item", "update_item"]
    assert row(aws_events, "go-row-key")["DeliveryStatus"] == "BOUNCED"
