"""The console offers only what the reader may do: a 403 is a console page naming the group that
grants access; a FAILED row for an unknown messageId says what to do instead of resending; "View
email" only where the email can be rendered; the front page's dead-letter link says "Look and
redrive" only to those who may redrive."""

from __future__ import annotations

from html import unescape

import pytest
from django.urls import reverse

from emailops import container
from monitoring import checks as monitoring
from tests.journal_factory import send_through_pipeline

pytestmark = pytest.mark.django_db

MAPPINGS = "/admin/templates_admin/templatemappingpage/"
AUDIT = "/admin/templates_admin/journalreadaudit/"


def text(response) -> str:
    return unescape(response.content.decode())


def signed_in(client, make_user, group):
    client.force_login(make_user(group))
    return client


@pytest.mark.parametrize(
    ("url", "group", "grants"),
    [
        (MAPPINGS, "Support", "This page is for the Template owners group"),
        (AUDIT, "Support", "This page is for the Support leads group"),
        (AUDIT, "Template owners", "This page is for the Support leads group"),
    ],
)
def test_a_refusal_is_a_console_page_naming_the_group(aws, client, make_user, url, group, grants):
    response = signed_in(client, make_user, group).get(url)

    page = text(response)
    assert response.status_code == 403
    assert grants in page
    assert 'id="console-refused"' in page
    assert 'id="nav-sidebar"' in page or 'id="user-tools"' in page  # the console's navigation
    assert 'href="/admin/"' in page


@pytest.fixture
def failed(aws):
    """A FAILED row: the producer's messageId has no mapping."""
    aws.load_samples()
    send_through_pipeline(
        aws, {"messageId": "no-such-message", "recipients": [{"email": "kim@example.com"}]}
    )
    from templates_admin.journal.selectors import journal_search

    return journal_search(adapters=container.current(), query="kim@example.com").rows[0]


def test_a_failed_row_for_an_unknown_message_id_says_what_to_do(failed, client, make_user):
    url = reverse("admin:templates_admin_journal_detail", args=[failed.key])
    page = text(signed_in(client, make_user, "Support").get(url))

    assert "no template mapping has the messageId 'no-such-message'" in page
    assert "a Template owner adds or fixes the mapping" in page
    assert "resend this email from here" not in page
    assert 'id="journal-resend-link"' not in page
    assert 'id="journal-email-link"' not in page  # it cannot be rendered


def test_view_email_is_offered_for_a_row_that_renders(aws, client, make_user):
    aws.load_samples()
    send_through_pipeline(
        aws,
        {
            "messageId": "added-to-team",
            "recipients": [{"email": "dana@example.com"}],
            "context": {"teamName": "Curators", "host": "app.test", "organizationNodeId": "N:1"},
        },
    )
    from templates_admin.journal.selectors import journal_search

    row = journal_search(adapters=container.current(), query="dana@example.com").rows[0]
    url = reverse("admin:templates_admin_journal_detail", args=[row.key])
    assert 'id="journal-email-link"' in text(signed_in(client, make_user, "Support").get(url))


@pytest.mark.parametrize(
    ("group", "link"),
    [("Support", "See what is there"), ("Support leads", "Look and redrive")],
)
def test_the_front_page_offers_redrive_only_to_who_may(aws, client, make_user, group, link):
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody="{}")
    monitoring.dead_letter_depth_check(queue=container.current().queue)

    page = text(signed_in(client, make_user, group).get("/admin/"))

    assert f'id="ops-banner-dlq-link">{link}</a>' in page
    if group == "Support":
        assert "Look and redrive" not in page


def test_the_favicon_is_a_static_file_not_a_404(client):
    from django.contrib.staticfiles import finders

    response = client.get("/favicon.ico")

    assert response.status_code == 302
    assert response["Location"].endswith("templates_admin/favicon.svg")
    assert finders.find("templates_admin/favicon.svg")
