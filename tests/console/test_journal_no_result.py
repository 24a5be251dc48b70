"""An empty search says why: nothing for the address, a filter hid N rows (with a link that
drops it), or the date window ends before the rows' times. Never "never queued" when rows were
read and filtered away."""

from __future__ import annotations

from datetime import UTC, datetime
from html import unescape

import pytest

from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = pytest.mark.django_db

BASE = "/admin/templates_admin/emailjournalpage/"
DAY = 86_400


@pytest.fixture
def bounced(aws):
    """Two rows to bounce@example.com (SENT, bounced), written on 2026-05-28."""
    put_rows(
        aws.dynamodb,
        "email-journal",
        [
            journal_row("bounce@example.com", at=BASE_TIME, DeliveryStatus="BOUNCED"),
            journal_row("bounce@example.com", at=BASE_TIME + 60, message_id="welcome"),
            journal_row("solo@example.com", at=BASE_TIME),
        ],
    )
    return aws


@pytest.fixture
def support(client, make_user):
    client.force_login(make_user("Support"))
    return client


def page(client, **params) -> str:
    response = client.get(BASE, params)
    assert response.status_code == 200
    return unescape(response.content.decode())


def test_a_filter_that_hid_rows_says_so_with_a_link_without_it(bounced, support):
    shown = page(support, q="bounce@example.com", delivery="DELIVERED", status="SENT")

    assert "The filters hid 2 rows to this address." in shown
    assert "never queued" not in shown and "check the producer" not in shown
    assert 'href="?q=bounce%40example.com" id="journal-drop-filters"' in shown


def test_one_hidden_row_is_one_row(bounced, support):
    shown = page(support, q="solo@example.com", delivery="BOUNCED")

    assert "The filters hid 1 row to this address." in shown


def test_a_window_that_ends_before_the_rows_says_so(bounced, support):
    day_before = datetime.fromtimestamp(BASE_TIME - 3 * DAY, UTC).date().isoformat()
    shown = page(support, q="bounce@example.com", until=day_before)

    assert "The window ends before the oldest row's time" in shown
    assert "2 rows to <code>bounce@example.com</code> lie outside it" in shown
    assert "never queued" not in shown
    assert 'id="journal-drop-dates"' in shown


def test_a_window_that_starts_after_the_rows_says_so(bounced, support):
    later = datetime.fromtimestamp(BASE_TIME + 3 * DAY, UTC).date().isoformat()
    shown = page(support, q="bounce@example.com", since=later, status="SENT")

    assert "The window starts after the newest row's time" in shown


def test_an_address_with_no_row_at_all_is_never_queued(bounced, support):
    shown = page(support, q="nobody@example.com", delivery="DELIVERED")

    assert "No journal row for this address." in shown
    assert "never queued" in shown and "check the producer" in shown
    assert "filters hid" not in shown
