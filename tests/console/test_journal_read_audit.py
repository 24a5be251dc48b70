"""Journal reads are audited (console search, detail and email pages, email_log, the API), and the
audit page is for Support leads and superusers, not Support."""

from __future__ import annotations

import getpass
import io

import pytest
from django.core.management import call_command

from audit.models import JournalReadAudit
from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = pytest.mark.django_db

JOURNAL = "/admin/templates_admin/emailjournalpage/"
AUDIT = "/admin/templates_admin/journalreadaudit/"
ROW = journal_row("pat@example.com", at=BASE_TIME)


@pytest.fixture
def journal(aws):
    aws.load_samples()
    put_rows(aws.dynamodb, "email-journal", [ROW])
    return aws


def test_console_reads_are_audited_with_who_and_what(client, journal, make_user):
    support = make_user("Support")
    client.force_login(support)

    client.get(JOURNAL)  # the empty search form reads nothing
    client.get(JOURNAL, {"q": "pat@example.com", "status": "SENT"})
    client.get(f"{JOURNAL}entry/{ROW['Id']}/")
    client.get(f"{JOURNAL}entry/{ROW['Id']}/email/")

    audits = list(JournalReadAudit.objects.order_by("id"))
    assert [(a.action, a.query) for a in audits] == [
        ("search", "pat@example.com"),
        ("detail", ROW["Id"]),
        ("email", ROW["Id"]),
    ]
    assert {(a.channel, a.user, a.actor) for a in audits} == {("console", support, "support")}
    assert audits[0].filters == {"status": "SENT"}


def test_email_log_is_audited_with_the_os_user(journal):
    call_command("email_log", "recipient", "pat@example.com", "--message-id", "added-to-team",
                 stdout=io.StringIO())  # fmt: skip
    call_command("email_log", "id", ROW["Id"], stdout=io.StringIO())

    recipient, by_id = JournalReadAudit.objects.order_by("id")
    assert (recipient.channel, recipient.action, recipient.query) == (
        "cli",
        "recipient",
        "pat@example.com",
    )
    assert recipient.filters == {"message_id": "added-to-team"}  # every row: no --limit
    assert (by_id.action, by_id.query) == ("id", ROW["Id"])
    assert recipient.actor == f"os:{getpass.getuser()}" and recipient.user is None


@pytest.mark.parametrize(
    "group, superuser", [("Support leads", False), (None, True)]
)  # fmt: skip
def test_support_leads_and_superusers_read_the_audit_page(
    client, journal, make_user, group, superuser
):
    reader = make_user("Support", username="reader")
    client.force_login(reader)
    client.get(JOURNAL, {"q": "pat@example.com"})

    client.force_login(make_user(group, superuser=superuser))
    index = client.get("/admin/").content.decode()
    page = client.get(AUDIT)

    assert "Journal reads" in index
    assert page.status_code == 200
    assert "reader" in page.content.decode() and "pat@example.com" in page.content.decode()
    audit = JournalReadAudit.objects.get(action="search")
    assert client.get(f"{AUDIT}{audit.pk}/change/").status_code == 200  # the read-only view
    assert client.post(f"{AUDIT}{audit.pk}/delete/", {"post": "yes"}).status_code == 403
    assert client.get(f"{AUDIT}add/").status_code == 403
    # Reading the trail is recorded too (its queries name addresses); nothing else changed.
    trail = JournalReadAudit.objects.exclude(pk=audit.pk).order_by("id")
    assert [(a.action, a.query, a.rows) for a in trail] == [
        ("read-audit", "", 1),
        ("read-audit", f"#{audit.pk}", 1),
    ]


@pytest.mark.parametrize("group", ["Support", "Template owners", None])
def test_others_cannot_see_the_audit(client, journal, make_user, group):
    client.force_login(make_user(group))

    assert client.get(AUDIT).status_code == 403
    assert "Journal reads" not in client.get("/admin/").content.decode()


def test_anonymous_users_are_sent_to_the_login(client, journal):
    response = client.get(AUDIT)
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


def test_the_audit_page_prints_dates_as_every_other_page_does(client, journal, make_user):
    from datetime import UTC, datetime

    audit = JournalReadAudit.objects.create(channel="cli", actor="ops", action="id", query="x")
    JournalReadAudit.objects.filter(pk=audit.pk).update(at=datetime(2026, 12, 2, 1, 40, tzinfo=UTC))
    client.force_login(make_user("Support leads"))
    page = client.get(AUDIT).content.decode()
    assert "2026-12-02 01:40:00 UTC" in page  # as the journal and suppression pages write it
    assert "Dec. 2, 2026" not in page
