"""A Go-era QUEUED row (no ClaimExpiresAt, an old Timestamp) reads the same everywhere: the journal
list, the detail page and ``email_log`` all apply JournalRow's one lease rule (they disagreed: the
list said not stuck while the detail page said "Stuck since…")."""

from __future__ import annotations

import io
import time
from html import unescape

import pytest
from django.core.management import call_command
from django.urls import reverse

from templates_admin.journal.presentation import GO_LEASE_SECONDS_DEFAULT
from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = pytest.mark.django_db

LIST = "/admin/templates_admin/emailjournalpage/"


def _pages(client, key: str) -> tuple[str, str, str]:
    listing = unescape(client.get(LIST, {"q": "hal@example.com"}).content.decode())
    detail_url = reverse("admin:templates_admin_journal_detail", args=[key])
    detail = unescape(client.get(detail_url).content.decode())
    out = io.StringIO()
    call_command("email_log", "id", key, stdout=out, stderr=io.StringIO())
    return listing, detail, out.getvalue()


@pytest.fixture
def support(client, make_user):
    client.force_login(make_user("Support"))
    return client


def test_an_old_go_queued_row_is_stuck_on_every_page(aws, support, settings):
    settings.CLAIM_LEASE_SECONDS = 0
    row = journal_row("hal@example.com", at=BASE_TIME, status="QUEUED", go_row=True)
    put_rows(aws.dynamodb, "email-journal", [row])

    listing, detail, log = _pages(support, row["Id"])

    assert "QUEUED · stuck" in listing
    assert "Stuck since" in detail
    assert "Stuck since" in log


def test_a_go_queued_row_within_its_lease_is_in_progress_on_every_page(aws, support, settings):
    settings.CLAIM_LEASE_SECONDS = 0
    now = int(time.time())
    row = journal_row("hal@example.com", at=now - GO_LEASE_SECONDS_DEFAULT // 2, status="QUEUED",
                      go_row=True)  # fmt: skip
    put_rows(aws.dynamodb, "email-journal", [row])

    listing, detail, log = _pages(support, row["Id"])

    assert (
        "· stuck" not in listing
        and "QUEUED" in listing
        and "Stuck since" not in detail
        and "Stuck since" not in log
    )
    assert "In progress" in detail and "In progress" in log
