"""SES identity notifications (``notificationType``, the older format the Go service's bounce
handler subscribes to) are read as the same events as event publishing: same types, recipients,
details and event ids, so an event that arrives in both formats is applied once."""

from __future__ import annotations

import copy
import json

import pytest

from emailops.core.delivery_events import DeliveryStatus, EventType
from tests.core.test_delivery_events import SES_ID, envelope, parse, ses_event


def as_notification(event: dict) -> dict:
    """The identity-notification twin of an event-publishing record: ``notificationType`` for
    ``eventType``, and no message tags (identity notifications carry none)."""
    twin = copy.deepcopy(event)
    twin["notificationType"] = twin.pop("eventType")
    twin["mail"].pop("tags", None)
    return twin


@pytest.mark.parametrize("wrapped", [False, True], ids=["raw", "sns"])
def test_bounce_complaint_and_delivery_notifications(wrapped):
    def read(name: str):
        data = ses_event(name)
        return parse(envelope(data) if wrapped else json.dumps(data))

    bounce = read("legacy-bounce-notification.json")
    assert (bounce.type, bounce.delivery_status) == (EventType.BOUNCE, DeliveryStatus.BOUNCED)
    assert (bounce.bounce_type, bounce.bounce_subtype) == ("Permanent", "General")
    assert bounce.recipients == ("recipient@example.com",)
    assert bounce.diagnostic_code == "smtp; 550 5.1.1 user unknown"
    assert (bounce.ses_message_id, bounce.journal_key) == (SES_ID, None)

    complaint = read("legacy-complaint-notification.json")
    assert complaint.type is EventType.COMPLAINT
    assert complaint.recipients == ("Recipient@Example.com",)  # as SES reported it
    assert complaint.suppressions() == [
        ("Recipient@Example.com", "complaint", "marked as spam (abuse)")
    ]

    delivery = read("legacy-delivery-notification.json")
    assert (delivery.type, delivery.delivery_status) == (
        EventType.DELIVERY,
        DeliveryStatus.DELIVERED,
    )
    assert delivery.at == "2016-01-27T14:59:38.237Z"
    assert "250 ok" in delivery.summary
    assert delivery.suppressions() == []


@pytest.mark.parametrize("name", ["bounce.json", "complaint.json", "delivery.json"])
def test_a_notification_and_its_published_event_have_one_event_id(name):
    published = parse(envelope(ses_event(name)))
    notified = parse(envelope(as_notification(ses_event(name)), message_id="sns-other"))
    assert notified.type is published.type
    assert notified.event_id == published.event_id


def test_a_transient_bounce_notification_suppresses_nobody():
    soft = as_notification(ses_event("bounce-transient.json"))
    assert parse(json.dumps(soft)).suppressions() == []


def test_the_subscription_notice_is_an_unknown_event_not_an_error():
    notice = parse(envelope(ses_event("legacy-subscription-succeeded.json")))
    assert notice.type is EventType.UNKNOWN
