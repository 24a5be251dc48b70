"""Identity notifications through the events consumer's handler on moto: matched by SES message id
(no tag), applied once beside the same event from event publishing, suppressing in the shared
table; bootstrap_aws subscribes the events queue to the Go service's topic."""

from __future__ import annotations

import io

from django.core.management import call_command

from emailops import container
from emailops.core.delivery_handler import EventAction
from tests.aws.test_journal import NOW, claim
from tests.core.test_delivery_events import SES_ID, envelope, ses_event
from tests.core.test_identity_notifications import as_notification

KEY = "journal-key-1"


def sent_row(recipient: str = "recipient@example.com") -> None:
    journal = container.current().journal
    journal.claim(claim(KEY, recipient=recipient))
    assert journal.mark_sent(KEY, attempt=1, provider_id=SES_ID, sent_at=NOW)


def test_a_bounce_notification_lands_on_its_row_and_suppresses(aws_events):
    sent_row()
    handler = container.current().delivery_event_handler
    outcome = handler.handle(envelope(ses_event("legacy-bounce-notification.json")))
    assert (outcome.action, outcome.result) == (EventAction.DELETE, "applied")
    row = container.current().journal.get(KEY)
    assert row["DeliveryStatus"] == "BOUNCED"
    item = aws_events.dynamodb.get_item(
        TableName="email-suppression",
        Key={"Email": {"S": "recipient@example.com"}},
        ConsistentRead=True,
    )["Item"]
    assert item["Reason"] == {"S": "bounce"}


def test_the_same_bounce_in_both_formats_is_applied_once(aws_events):
    sent_row()
    handler = container.current().delivery_event_handler
    published = handler.handle(envelope(ses_event("bounce.json"), message_id="sns-1"))
    notified = handler.handle(
        envelope(as_notification(ses_event("bounce.json")), message_id="sns-2")
    )
    assert published.result == "applied"
    assert (notified.action, notified.result) == (EventAction.DELETE, "duplicate")
    assert len(container.current().journal.get(KEY)["DeliveryEvents"]) == 1


def test_a_complaint_notification_suppresses_as_ses_reported_it(aws_events):
    sent_row("Recipient@Example.com")
    handler = container.current().delivery_event_handler
    handler.handle(envelope(ses_event("legacy-complaint-notification.json")))
    store = container.current().suppression_list
    assert store.get("Recipient@Example.com").reason == "complaint"
    assert store.get("recipient@example.com").reason == "complaint"


def test_bootstrap_subscribes_the_events_queue_to_the_go_topic(aws_events, settings):
    sns = aws_events.sns
    go_topic = sns.create_topic(Name="go-ses-notifications")["TopicArn"]
    settings.SES_EVENTS_NOTIFICATIONS_TOPIC_ARN = go_topic
    container.reset()
    out = io.StringIO()
    call_command("bootstrap_aws", stdout=out)
    call_command("bootstrap_aws", stdout=io.StringIO())  # idempotent
    assert f"topic {go_topic}: subscribed by" in out.getvalue()
    assert f"add {go_topic} to SES_EVENTS_TOPIC_ARNS" in out.getvalue()
    [subscription] = sns.list_subscriptions_by_topic(TopicArn=go_topic)["Subscriptions"]
    assert subscription["Endpoint"].endswith(aws_events.events_queue_url.rsplit("/", 1)[-1])
