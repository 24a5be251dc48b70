"""Who may search the journal, read its rows and resend: checked by every view, server-side."""

from __future__ import annotations

import pytest

from templates_admin.models import EmailAction
from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = pytest.mark.django_db

BASE = "/admin/templates_admin/emailjournalpage/"
ROW = journal_row("pat@example.com", at=BASE_TIME)
ENTRY = f"{BASE}entry/{ROW['Id']}/"
READ_PAGES = [
    BASE,
    f"{BASE}?q=pat@example.com",
    f"{BASE}export.csv?q=pat@example.com",
    ENTRY,
    f"{ENTRY}email/",
]
RESEND = f"{ENTRY}resend/"
RESEND_FORM = {"reason": "they asked again", "dedupe_id": "resend-" + "a" * 32}


@pytest.fixture
def journal(aws):
    aws.load_samples()
    put_rows(aws.dynamodb, "email-journal", [ROW])
    return aws


def signed_in(client, user):
    client.force_login(user)
    return client


@pytest.mark.parametrize("url", [*READ_PAGES, RESEND])
def test_anonymous_users_are_sent_to_the_login(client, journal, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/?next=")


@pytest.mark.parametrize("url", [*READ_PAGES, RESEND])
def test_staff_without_a_console_group_are_refused(client, journal, make_user, url):
    response = signed_in(client, make_user(None)).get(url)
    assert response.status_code == 403


def test_staff_without_a_console_group_see_no_journal_entry(client, journal, make_user):
    index = signed_in(client, make_user(None)).get("/admin/")
    assert "Email journal" not in index.content.decode()


@pytest.mark.parametrize("url", READ_PAGES)
def test_support_can_search_and_read(client, journal, make_user, url):
    response = signed_in(client, make_user("Support")).get(url)
    assert response.status_code == 200


def test_support_cannot_resend(client, journal, make_user):
    support = signed_in(client, make_user("Support"))

    assert support.get(RESEND).status_code == 403
    assert support.post(RESEND, RESEND_FORM).status_code == 403
    assert "journal-resend-link" not in support.get(ENTRY).content.decode()
    assert not EmailAction.objects.exists()
    assert journal.queue_messages(journal.queue_url) == []


@pytest.mark.parametrize(
    "group, superuser", [("Support leads", False), ("Template owners", False), (None, True)]
)
def test_resenders_can_resend(client, journal, make_user, group, superuser):
    user = make_user(group, superuser=superuser)
    resender = signed_in(client, user)

    assert "journal-resend-link" in resender.get(ENTRY).content.decode()
    assert resender.get(RESEND).status_code == 200
    response = resender.post(RESEND, RESEND_FORM)

    assert response.status_code == 302 and response["Location"] == ENTRY
    assert EmailAction.objects.get().user == user
    assert len(journal.queue_messages(journal.queue_url)) == 1
