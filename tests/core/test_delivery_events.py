"""Parsing SES events shaped like AWS's documented examples (tests/contract/ses-events), bare and in
an SNS envelope, into one normalised event."""

from __future__ import annotations

import json

import pytest

from emailops.aws.suppression import Suppression
from emailops.core.delivery_events import (
    JOURNAL_KEY_TAG,
    BadEvent,
    DeliveryStatus,
    EventType,
    decode_journal_key,
    encode_journal_key,
    parse_envelope,
    parse_event,
    timestamp_ms,
)
from emailops.core.journal_row import DeliveryState, JournalRow
from emailops.core.journal_words import bounce_reason, delivery_words, suppression_detail
from tests.conftest import CONTRACT

EVENTS = CONTRACT / "ses-events"
SES_ID = "EXAMPLE7c191be45-e9aedb9a-02f9-4d12-a87d-dd0099a07f8a-000000"
TOPIC = "arn:aws:sns:us-east-1:123456789012:email-ses-events"


def ses_event(name: str) -> dict:
    return json.loads((EVENTS / name).read_text())


def envelope(event: dict, *, message_id: str = "sns-1", topic: str = TOPIC, **extra) -> str:
    return json.dumps(
        {
            "Type": "Notification",
            "MessageId": message_id,
            "TopicArn": topic,
            "Message": json.dumps(event),
            "Timestamp": "2026-11-30T14:31:27.123Z",
            "SignatureVersion": "1",
            "Signature": "c2lnbmF0dXJl",
            "SigningCertURL": "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-x.pem",
            "UnsubscribeURL": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe",
            **extra,
        }
    )


def parse(body: str):
    return parse_event(*parse_envelope(body))


# (file, type, SES timestamp of the event itself, delivery status)
EXPECTED = [
    ("send.json", EventType.SEND, "2016-10-14T05:02:16.645Z", None),
    ("delivery.json", EventType.DELIVERY, "2016-10-19T23:21:04.133Z", DeliveryStatus.DELIVERED),
    ("bounce.json", EventType.BOUNCE, "2017-08-05T00:41:02.669Z", DeliveryStatus.BOUNCED),
    ("complaint.json", EventType.COMPLAINT, "2017-08-05T00:41:02.669Z", DeliveryStatus.COMPLAINED),
    ("delivery-delay.json", EventType.DELIVERY_DELAY, "2020-06-16T00:25:40.095Z", "DELAYED"),
    ("reject.json", EventType.REJECT, "2016-10-14T17:38:15.211Z", DeliveryStatus.REJECTED),
    ("rendering-failure.json", EventType.RENDERING_FAILURE, "2018-01-22T18:43:06.197Z", None),
    ("open.json", EventType.OPEN, "2017-08-09T22:00:19.652Z", None),
    ("click.json", EventType.CLICK, "2017-08-09T23:51:25.570Z", None),
    ("subscription.json", EventType.SUBSCRIPTION, "2022-01-12T01:00:17.910Z", None),
]


@pytest.mark.parametrize("wrapped", [False, True], ids=["raw", "sns"])
@pytest.mark.parametrize(("name", "kind", "at", "status"), EXPECTED, ids=[e[0] for e in EXPECTED])
def test_every_event_type(name, kind, at, status, wrapped):
    raw = ses_event(name)
    event = parse(envelope(raw) if wrapped else json.dumps(raw))
    assert event.type is kind
    assert event.at == at
    assert event.delivery_status == status
    assert event.ses_message_id == SES_ID
    assert event.recipients == ("recipient@example.com",)
    assert event.journal_key == "journal-key-1"
    assert event.raw == raw
    assert event.summary and "\n" not in event.summary
    assert event.sns_message_id == ("sns-1" if wrapped else "")
    assert event.topic_arn == (TOPIC if wrapped else "")


def test_bounce_details_and_words():
    event = parse(json.dumps(ses_event("bounce.json")))
    assert (event.bounce_type, event.bounce_subtype) == ("Permanent", "General")
    assert event.diagnostic_codes == (("recipient@example.com", "smtp; 550 5.1.1 user unknown"),)
    assert event.summary == (
        "Bounced, recipient@example.com: mailbox does not exist (smtp; 550 5.1.1 user unknown)"
    )
    assert event.suppressions() == [
        (
            "recipient@example.com",
            "bounce",
            "mailbox does not exist (smtp; 550 5.1.1 user unknown)",
        )
    ]


def test_a_soft_bounce_suppresses_nobody():
    event = parse(json.dumps(ses_event("bounce-transient.json")))
    assert event.bounce_type == "Transient" and event.bounce_subtype == "MailboxFull"
    assert "mailbox full (temporary)" in event.summary
    assert event.suppressions() == []


def test_complaint_delay_reject_failure_open_click_subscription_details():
    complaint = parse(json.dumps(ses_event("complaint.json")))
    assert complaint.complaint_feedback_type == "abuse"
    assert complaint.suppressions() == [
        ("recipient@example.com", "complaint", "marked as spam (abuse)")
    ]
    delay = parse(json.dumps(ses_event("delivery-delay.json")))
    assert delay.delay_type == "TransientCommunicationFailure"
    assert delay.diagnostic_code == "smtp; 421 4.4.1 Unable to connect to remote host"
    assert "2020-06-16T00:25:40.914Z" in delay.summary
    assert parse(json.dumps(ses_event("reject.json"))).reject_reason == "Bad content"
    failure = parse(json.dumps(ses_event("rendering-failure.json")))
    assert "attributeName" in failure.failure_message
    assert not failure.proves_sent
    opened = parse(json.dumps(ses_event("open.json")))
    assert opened.ip_address == "192.0.2.1" and "iPhone" in opened.user_agent
    click = parse(json.dumps(ses_event("click.json")))
    assert click.link.endswith("send-email-smtp.html")
    subscription = parse(json.dumps(ses_event("subscription.json")))
    assert subscription.subscription["newTopicPreferences"]["unsubscribeAll"] is True


def test_legacy_identity_notifications():
    bounce = parse(json.dumps(ses_event("legacy-bounce-notification.json")))
    assert bounce.type is EventType.BOUNCE and bounce.raw_type == "Bounce"
    assert bounce.journal_key is None  # identity notifications carry no tags
    assert bounce.suppressions()[0][1] == "bounce"
    other = parse(envelope(ses_event("legacy-subscription-succeeded.json")))
    assert other.type is EventType.UNKNOWN
    assert other.raw_type == "AmazonSnsSubscriptionSucceeded"
    assert "AmazonSnsSubscriptionSucceeded" in other.summary


def test_unknown_event_types_are_kept_not_refused():
    raw = {"eventType": "SomethingNew", "mail": {"messageId": "m-1", "destination": ["a@x.test"]}}
    event = parse(json.dumps(raw))
    assert event.type is EventType.UNKNOWN and event.raw_type == "SomethingNew"
    assert event.ses_message_id == "m-1" and event.raw == raw
    assert parse(json.dumps({"hello": "world"})).type is EventType.UNKNOWN
    assert parse(envelope(raw)).type is EventType.UNKNOWN


def test_an_sns_subscription_confirmation_is_unknown_not_an_error():
    body = json.loads(envelope({}))
    body.update(Type="SubscriptionConfirmation", Message="You have chosen to subscribe...")
    event = parse(json.dumps(body))
    assert event.type is EventType.UNKNOWN and event.raw_type == "SNS SubscriptionConfirmation"


@pytest.mark.parametrize(
    "body",
    ["not json", "[1, 2]", '"text"', envelope({}, Message="not json"), envelope({}, Message="[]")],
)
def test_unreadable_bodies_are_bad_events(body):
    with pytest.raises(BadEvent):
        parse(body)


def test_the_event_id_is_the_same_bare_or_wrapped_and_differs_between_events():
    raw = ses_event("delivery.json")
    assert parse(json.dumps(raw)).event_id == parse(envelope(raw, message_id="x")).event_id
    ids = {parse(json.dumps(ses_event(name))).event_id for name, *_ in EXPECTED}
    assert len(ids) == len(EXPECTED)


@pytest.mark.parametrize(
    "key", ["k1", "dedupe-7:Alice@Example.com", "ü/+=?&", "a" * 64, "x:" + "é" * 40]
)
def test_journal_key_tag_round_trip_in_ses_tag_characters(key):
    value = encode_journal_key(key)
    assert value is not None and len(value) <= 256
    assert all(c.isascii() and (c.isalnum() or c in "_-") for c in value)
    assert decode_journal_key(value) == key
    raw = ses_event("send.json")
    raw["mail"]["tags"][JOURNAL_KEY_TAG] = [value]
    assert parse(json.dumps(raw)).journal_key == key


def test_a_key_too_long_for_a_tag_is_not_encoded_and_garbage_does_not_decode():
    assert encode_journal_key("k" * 193) is None
    assert encode_journal_key("k" * 192) is not None
    assert decode_journal_key("!!!") is None
    assert decode_journal_key("_w") is None  # not UTF-8


def test_timestamps():
    assert timestamp_ms("2017-08-05T00:41:02.669Z") == 1501893662669
    assert timestamp_ms("2017-08-05T00:41:02Z") == 1501893662000
    assert timestamp_ms("") == 0 and timestamp_ms("yesterday") == 0


def test_bounce_words():
    assert suppression_detail("Permanent", "NoEmail") == "address does not exist"
    assert suppression_detail("Permanent", "General", "smtp; 550 5.7.1 blocked") == (
        "refused by the recipient's server (policy or spam filter) (smtp; 550 5.7.1 blocked)"
    )
    assert suppression_detail("Undetermined", "Undetermined").startswith("SES could not tell")


def test_a_bounce_suppression_names_its_kind_once():
    """It read "hard bounce: hard bounce: the mailbox does not exist (…)" on the page."""
    event = parse(json.dumps(ses_event("bounce.json")))
    (_, reason, detail) = event.suppressions()[0]
    words = Suppression("recipient@example.com", reason, detail, "", 0).in_words
    assert words == "hard bounce: mailbox does not exist (smtp; 550 5.1.1 user unknown)"


def test_a_no_email_bounce_reads_the_same_in_the_timeline_and_the_headline():
    """The timeline said "the address does not exist", the headline "address does not exist"."""
    data = ses_event("bounce.json")
    data["bounce"]["bounceSubType"] = "NoEmail"
    for bounced in data["bounce"]["bouncedRecipients"]:
        bounced.pop("diagnosticCode", None)
    event = parse(json.dumps(data))
    row = JournalRow(
        key="k",
        status="SENT",
        delivery=DeliveryState("BOUNCED", bounce_type="Permanent", bounce_subtype="NoEmail"),
    )
    reason = bounce_reason("Permanent", "NoEmail", "")
    assert event.summary == f"Bounced, recipient@example.com: {reason}"
    assert delivery_words(row).text == f"bounced: {reason}"
