"""The address page's preferences: each category's state and history from the store, and a
Support lead's re-subscription, only at the recipient's request, audited."""

from __future__ import annotations

import logging
from html import unescape

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import Client
from django.urls import reverse

from emailops import container
from emailops.core.preferences import HowChanged, Preference
from emailops.unsubscribe import unsubscribe_token
from templates_admin.display import utc_text
from templates_admin.models import CategoryDefinition, PreferenceResubscribe
from templates_admin.suppression.services import preference_resubscribe
from tests.fake_preferences import install_fake_preferences
from tests.journal_factory import BASE_TIME

pytestmark = pytest.mark.django_db

ADDRESS = "Dana@Example.com"


def entry_url(address: str, suffix: str = "") -> str:
    return reverse("admin:templates_admin_suppression_detail", args=[address]) + suffix


@pytest.fixture
def store(aws):
    CategoryDefinition.objects.create(slug="dataset-activity", label="Activity on datasets")
    store = install_fake_preferences()
    store.set(Preference("dana@example.com", "dataset-activity", True, "page", BASE_TIME - 60))
    store.set(Preference("dana@example.com", "dataset-activity", False, "one-click", BASE_TIME))
    store.set(Preference("dana@example.com", "newsletter", True, "page", BASE_TIME))
    return store


def page_of(client, make_user, group: str, address: str = ADDRESS) -> str:
    client.force_login(make_user(group))
    return unescape(client.get(entry_url(address)).content.decode())


def test_the_address_page_shows_each_category_and_its_history(store, client, make_user):
    page = page_of(client, make_user, "Support")
    table = page[page.index('id="preferences"') :]
    assert "Activity on datasets" in table and "unsubscribed" in table and "one-click" in table
    assert "newsletter" in table  # no definition: the slug
    history = page[page.index('id="preference-history"') :]
    assert history.count("<li>") == 3
    assert "unsubscribed from Activity on datasets (one-click, from the mail client)" in history
    assert "Re-subscribe" not in page  # Support sees, does not change


def test_an_address_without_preferences_or_without_a_store_says_so(aws, client, make_user):
    page = page_of(client, make_user, "Support", "nobody@example.com")
    assert 'id="preferences-unavailable"' in page or 'id="preferences-none"' in page
    install_fake_preferences()
    page = unescape(client.get(entry_url("nobody@example.com")).content.decode())
    assert 'id="preferences-none"' in page


def test_a_lead_resubscribes_only_when_the_recipient_asked(store, client, make_user, caplog):
    page = page_of(client, make_user, "Support leads")
    assert "Re-subscribe" in page
    url = entry_url(ADDRESS, "resubscribe/")

    refused = client.post(url, {"category": "dataset-activity", "reason": "ticket 12"})
    assert refused.status_code == 400
    assert "confirm that they asked" in unescape(refused.content.decode())
    assert store.get(ADDRESS, "dataset-activity").subscribed is False

    with caplog.at_level(logging.INFO, logger="templates_admin.suppression"):
        done = client.post(
            url, {"category": "dataset-activity", "reason": "ticket 12", "recipient_asked": "on"}
        )
    assert done.status_code == 302
    now = store.get(ADDRESS, "dataset-activity")
    assert (now.subscribed, now.how) == (True, HowChanged.SUPPORT.value)
    assert now.label == "Activity on datasets"
    change = PreferenceResubscribe.objects.get()
    assert (change.address, change.category, change.user.username, change.reason) == (
        "dana@example.com",
        "dataset-activity",
        "support-leads",
        "ticket 12",
    )
    assert change.unsubscribed_how == "one-click" and change.recipient_asked
    assert any(
        "preference.resubscribed" in r.getMessage() and "support-leads" in r.getMessage()
        for r in caplog.records
    )
    page = unescape(client.get(entry_url(ADDRESS)).content.decode())
    assert "subscribed to Activity on datasets again" in page
    assert 'id="preference-resubscribes"' in page


def test_support_may_not_resubscribe(store, client, make_user):
    client.force_login(make_user("Support"))
    response = client.post(
        entry_url(ADDRESS, "resubscribe/"),
        {"category": "dataset-activity", "reason": "x", "recipient_asked": "on"},
    )
    assert response.status_code == 403
    assert store.get(ADDRESS, "dataset-activity").subscribed is False


def test_the_service_checks_permission_request_and_state_itself(store, make_user):
    support, lead = make_user("Support"), make_user("Support leads")
    asked = {"address": ADDRESS, "reason": "ticket", "recipient_asked": True}
    with pytest.raises(PermissionDenied):
        preference_resubscribe(
            preference_store=container.current().preference_store,
            category="dataset-activity",
            user=support,
            **asked,
        )
    with pytest.raises(ValidationError, match="confirm that they asked"):
        preference_resubscribe(
            preference_store=container.current().preference_store,
            category="dataset-activity",
            user=lead,
            **(asked | {"recipient_asked": False}),
        )
    with pytest.raises(ValidationError, match="not unsubscribed"):
        preference_resubscribe(
            preference_store=container.current().preference_store,
            category="newsletter",
            user=lead,
            **asked,
        )
    assert not PreferenceResubscribe.objects.exists()


def test_a_store_that_cannot_be_read_leaves_the_rest_of_the_page(aws, client, make_user):
    from emailops.core.errors import TransientError

    store = install_fake_preferences()

    def broken(address):
        raise TransientError("read preferences", reason="throttled")

    store.of_address = broken
    page = page_of(client, make_user, "Support")
    assert 'id="preferences-error"' in page and "throttled" in page
    assert "is not on the suppression list" in page


def test_a_resubscribe_through_the_link_shows_on_the_address_page_from_the_link(
    aws, client, make_user, settings
):
    """Issue 35, finding 6: the recipient's own re-subscribe (the page's Undo, its toggles),
    through the real preferences table, is in the address page's history with "from the link"
    and its time (the page showed the real store's history as blank entries)."""
    settings.UNSUBSCRIBE_RATE_PER_CLIENT = settings.UNSUBSCRIBE_RATE_PER_ADDRESS = 0
    CategoryDefinition.objects.create(slug="dataset-activity", label="Activity on datasets")
    store = container.current().preference_store
    store.set(Preference("dana@example.com", "newsletter", False, "one-click", BASE_TIME))
    link = reverse("preferences:unsubscribe", args=[unsubscribe_token(ADDRESS, "dataset-activity")])
    recipient = Client()
    assert recipient.post(link, {"List-Unsubscribe": "One-Click"}).status_code == 200
    assert recipient.post(link, {"action": "undo"}).status_code == 200
    assert recipient.post(link, {"action": "set", "subscribed": ["newsletter"]}).status_code == 200
    [undo, *_] = [c for c in store.history(ADDRESS) if c.category == "dataset-activity"]
    assert (undo.subscribed, undo.how) == (True, HowChanged.PAGE.value)

    page = page_of(client, make_user, "Support")
    history = page[page.index('id="preference-history"') :]
    assert (
        f'<time title="{utc_text(undo.at)}">'
        in history.split("subscribed to Activity on datasets (from the link)")[0]
    )
    assert "subscribed to newsletter (from the link)" in history
    assert "unsubscribed from Activity on datasets (one-click, from the mail client)" in history
    assert "unsubscribed from newsletter (one-click, from the mail client)" in history
    table = page[page.index('id="preferences"') : page.index('id="preference-history"')]
    assert table.count("from the link") == 2
