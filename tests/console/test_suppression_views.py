"""The suppression list pages: who sees them, who may remove an address, and what is audited."""

from __future__ import annotations

from html import unescape

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from emailops import container
from templates_admin.models import SuppressionRemoval
from templates_admin.suppression.services import suppression_remove
from tests.journal_factory import BASE_TIME

pytestmark = pytest.mark.django_db

LIST = "/admin/templates_admin/suppressionlistpage/"


def entry_url(address: str, suffix: str = "") -> str:
    return reverse("admin:templates_admin_suppression_detail", args=[address]) + suffix


@pytest.fixture
def suppressed(aws):
    store = container.current().suppression_list
    store.add(
        "bob@example.com",
        reason="BOUNCE",
        detail="Permanent/General: 550 5.1.1 user unknown",
        source="0100018c-ses-message-id",
        now=BASE_TIME,
    )
    store.add("carol@example.com", reason="COMPLAINT", detail="abuse", source="ev-2", now=BASE_TIME)
    store.add("bea@other.org", reason="MANUAL", detail="asked by phone", source="", now=BASE_TIME)
    return store


def signed_in(client, make_user, group, **kwargs):
    client.force_login(make_user(group, **kwargs))
    return client


def text(response) -> str:
    return unescape(response.content.decode())


def test_entry_pages_live_under_the_list():
    assert entry_url("a/b@x.org") == f"{LIST}entry/a/b@x.org/"


def test_support_sees_the_list_with_why_and_since(suppressed, client, make_user):
    page = text(signed_in(client, make_user, "Support").get(LIST))

    assert page.count('class="suppression-row"') == 3
    assert "hard bounce" in page and "complaint" in page
    assert "Permanent/General: 550 5.1.1 user unknown" in page
    assert "2026-05-28 20:26:40 UTC" in page
    assert entry_url("bob@example.com") in page


def test_search_by_address_prefix_in_any_case(suppressed, client, make_user):
    page = text(signed_in(client, make_user, "Support").get(LIST, {"q": "B"}))
    assert page.count('class="suppression-row"') == 2 and "carol@" not in page

    none = text(client.get(LIST, {"q": "zed"}))
    assert "No suppressed address starts with" in none


def test_search_finds_a_go_row_in_its_own_case(aws, client, make_user):
    aws.dynamodb.put_item(
        TableName="email-suppression",
        Item={"Email": {"S": "Zoe.Go@Example.com"}, "Reason": {"S": "bounce"}},
    )
    page = text(signed_in(client, make_user, "Support").get(LIST, {"q": "Zoe.G"}))
    assert page.count('class="suppression-row"') == 1 and "Zoe.Go@Example.com" in page


def test_pages_follow_the_stores_cursor(aws, client, make_user):
    store = container.current().suppression_list
    for i in range(55):
        store.add(f"p{i:02}@example.com", reason="BOUNCE", detail="", source="", now=BASE_TIME)
    support = signed_in(client, make_user, "Support")

    first = text(support.get(LIST))
    more = first.split('id="suppression-next"')[0].rsplit('href="', 1)[1].split('"')[0]
    second = text(support.get(LIST + more))

    assert first.count("suppression-row") == 50 and second.count("suppression-row") == 5
    shown = {line.split("</a>")[0].rsplit(">", 1)[1] for line in
             (first + second).split('<tr class="suppression-row">')[1:]}  # fmt: skip
    assert len(shown) == 55
    assert support.get(LIST, {"cursor": "%%%"}).status_code == 400


def test_the_entry_page_explains_and_links_to_the_journal(suppressed, client, make_user):
    page = text(signed_in(client, make_user, "Support").get(entry_url("Bob@Example.com")))

    assert "bob@example.com is suppressed: hard bounce." in page
    assert "/emailjournalpage/?q=0100018c-ses-message-id" in page
    assert "/emailjournalpage/?q=bob%40example.com" in page
    assert 'id="suppression-remove-link"' not in page  # Support may not remove


@pytest.mark.parametrize("url", [LIST, entry_url("bob@example.com")])
def test_staff_without_a_console_group_are_refused(suppressed, client, make_user, url):
    assert client.get(url).status_code == 302  # anonymous: to the login
    assert signed_in(client, make_user, None).get(url).status_code == 403


def test_the_index_entry_shows_only_to_those_who_may_see_it(suppressed, client, make_user):
    assert "Suppression list" not in text(signed_in(client, make_user, None).get("/admin/"))
    client.logout()
    assert "Suppression list" in text(signed_in(client, make_user, "Support").get("/admin/"))


def test_support_cannot_remove(suppressed, client, make_user):
    support = signed_in(client, make_user, "Support")
    url = entry_url("bob@example.com", "remove/")

    assert support.get(url).status_code == 403
    assert support.post(url, {"reason": "fixed"}).status_code == 403
    assert suppressed.get("bob@example.com") is not None
    assert not SuppressionRemoval.objects.exists()


@pytest.mark.parametrize(
    "group, superuser", [("Support leads", False), ("Template owners", False), (None, True)]
)
def test_leads_remove_a_bounce_with_a_reason_and_it_is_audited(
    suppressed, client, make_user, group, superuser
):
    user = make_user(group, superuser=superuser)
    client.force_login(user)
    url = entry_url("bob@example.com", "remove/")
    assert 'id="suppression-remove-link"' in text(client.get(entry_url("bob@example.com")))

    confirm = text(client.get(url))
    refused = client.post(url, {"reason": "   "})
    response = client.post(url, {"reason": "Bob fixed his mailbox"})

    assert "550 5.1.1 user unknown" in confirm and "recipient_asked" not in confirm
    assert refused.status_code == 400 and "Say why you are removing" in text(refused)
    assert response.status_code == 302 and response["Location"] == entry_url("bob@example.com")
    assert suppressed.get("bob@example.com") is None
    removal = SuppressionRemoval.objects.get()
    assert (removal.address, removal.user, removal.reason) == (
        "bob@example.com",
        user,
        "Bob fixed his mailbox",
    )
    assert removal.suppression_reason == "bounce" and removal.suppression_source.startswith("0100")
    after = text(client.get(response["Location"]))
    assert "is not on the suppression list" in after and "Bob fixed his mailbox" in after


def test_a_complaint_needs_the_recipients_request(suppressed, client, make_user):
    lead = signed_in(client, make_user, "Support leads")
    url = entry_url("carol@example.com", "remove/")

    confirm = text(lead.get(url))
    unconfirmed = lead.post(url, {"reason": "she called"})
    assert "our email was spam" in confirm and 'name="recipient_asked"' in confirm
    assert unconfirmed.status_code == 400 and "confirm that the recipient asked" in text(
        unconfirmed
    )
    assert suppressed.get("carol@example.com") is not None

    done = lead.post(url, {"reason": "she called", "recipient_asked": "on"})
    assert done.status_code == 302 and suppressed.get("carol@example.com") is None
    assert SuppressionRemoval.objects.get().recipient_asked is True


def test_the_service_checks_permission_and_complaints_itself(suppressed, make_user):
    with pytest.raises(PermissionDenied):
        suppression_remove(
            suppression_list=container.current().suppression_list,
            address="bob@example.com",
            reason="x",
            user=make_user("Support"),
        )
    lead = make_user("Support leads")
    with pytest.raises(ValidationError, match="confirm that they asked"):
        suppression_remove(
            suppression_list=container.current().suppression_list,
            address="carol@example.com",
            reason="x",
            user=lead,
        )
    with pytest.raises(ValidationError, match="not on the suppression list"):
        suppression_remove(
            suppression_list=container.current().suppression_list,
            address="nobody@example.com",
            reason="x",
            user=lead,
        )
    assert suppressed.get("carol@example.com") is not None
    assert not SuppressionRemoval.objects.exists()


def test_removing_an_address_that_is_not_suppressed_goes_back_to_its_page(aws, client, make_user):
    lead = signed_in(client, make_user, "Support leads")
    response = lead.get(entry_url("gone@example.com", "remove/"))
    assert response.status_code == 302 and response["Location"] == entry_url("gone@example.com")


def test_the_list_words_a_reason_as_the_resend_page_and_the_consumer_do():
    """The list said "complaint (marked as spam)" and "added by hand" where the entry's own
    words (the resend page's, the consumer's log) said "complaint" and "suppressed by hand"."""
    from emailops.aws.suppression import REASONS, Suppression
    from templates_admin.suppression.views import _shown

    class Site:
        name = "admin"

    for reason in REASONS:
        entry = Suppression("a@example.com", reason, "", "", 0)
        assert _shown(entry, Site())["reason"] == entry.in_words


def test_a_go_written_row_is_shown_and_removed_with_every_spelling(aws, client, make_user):
    """The Go service writes the address as SES reported it (any case, RFC 3339 CreatedAt); the
    console finds it under any spelling, and the removal lifts every spelling and is audited per
    mailbox."""
    for spelling in ("Dana.Go@Example.com", "dana.go@example.com"):
        aws.dynamodb.put_item(
            TableName="email-suppression",
            Item={
                "Email": {"S": spelling},
                "Reason": {"S": "complaint"},
                "CreatedAt": {"S": "2026-12-01T10:00:00Z"},
            },
        )
    lead = signed_in(client, make_user, "Support leads")
    page = text(lead.get(entry_url("Dana.Go@Example.com")))
    assert "is suppressed: complaint" in page
    done = lead.post(
        entry_url("Dana.Go@Example.com", "remove/"), {"reason": "asked", "recipient_asked": "on"}
    )
    assert done.status_code == 302
    assert aws.dynamodb.scan(TableName="email-suppression")["Items"] == []
    removal = SuppressionRemoval.objects.get()
    assert (removal.address, removal.suppression_reason) == ("dana.go@example.com", "complaint")


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        ("bounce", "hard bounce"),
        ("BOUNCE", "hard bounce"),  # the old table's, and old audit rows
        ("complaint", "complaint"),
        ("COMPLAINT", "complaint"),
        ("manual", "added by hand"),
        ("MANUAL", "added by hand"),
        ("unsubscribe", "unsubscribed"),
        ("", "suppressed"),  # a Go row without a Reason
    ],
)
def test_reasons_are_worded_in_either_spelling(reason, words):
    from emailops.core.journal_words import suppression_reason

    assert suppression_reason(reason) == words
