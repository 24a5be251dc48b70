"""Status at a glance: a SENT row wears its delivery outcome (DELIVERED, BOUNCED, COMPLAINED,
DELAYED) with the SES acceptance as the second line; the row page's breadcrumb names
"messageId → recipient", not the hex key."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.urls import reverse

from emailops import container
from emailops.aws.journal_codec import row_from_item
from templates_admin.journal.presentation import status_pill
from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = pytest.mark.django_db

BASE = "/admin/templates_admin/emailjournalpage/"
NOW = BASE_TIME + 3600


def pill(**extra):
    return status_pill(
        row_from_item(journal_row("a@example.com", at=BASE_TIME, **extra)),
        now=NOW,
        lease=container.current().lease_policy,
    )


@pytest.mark.parametrize(
    ("delivery", "label", "tone"),
    [
        ("DELIVERED", "DELIVERED", "ok"),
        ("BOUNCED", "BOUNCED", "error"),
        ("COMPLAINED", "COMPLAINED", "error"),
        ("DELAYED", "DELAYED", "pending"),
    ],
)
def test_a_delivery_outcome_is_the_pill_and_the_acceptance_its_second_line(delivery, label, tone):
    shown = pill(DeliveryStatus=delivery, BounceType="Permanent")

    assert (shown.label, shown.tone, shown.secondary) == (label, tone, "accepted by SES")


def test_rows_without_an_outcome_wear_their_status():
    assert pill().label == "SENT" and pill().secondary == ""
    failed = pill(status="FAILED", Error="no mapping")
    assert (failed.label, failed.tone) == ("FAILED", "error")
    stuck = pill(status="QUEUED", ClaimExpiresAt=BASE_TIME + 30)
    assert stuck.label == "QUEUED · stuck"


@pytest.fixture
def rows(aws):
    bounced = journal_row(
        "bounce@example.com", at=BASE_TIME, DeliveryStatus="BOUNCED", BounceType="Permanent"
    )
    put_rows(aws.dynamodb, "email-journal", [bounced])
    return bounced


@pytest.fixture
def support(client, make_user):
    client.force_login(make_user("Support"))
    return client


def test_the_result_list_shows_bounced_not_a_green_sent(rows, support):
    page = unescape(support.get(BASE, {"q": "bounce@example.com"}).content.decode())

    badge = re.search(r'<span class="journal-badge ([^"]*)">([^<]*)</span>', page)
    assert badge and badge.group(2) == "BOUNCED"
    assert "journal-tone-error" in badge.group(1)
    assert '<span class="journal-pill-secondary">accepted by SES</span>' in page


def test_the_row_page_breadcrumb_is_message_id_to_recipient(rows, support):
    url = reverse("admin:templates_admin_journal_detail", args=[rows["Id"]])
    page = unescape(support.get(url).content.decode())

    crumbs = page[page.index('<div class="breadcrumbs">') :]
    crumbs = crumbs[: crumbs.index("</div>")]
    assert "added-to-team → bounce@example.com" in crumbs
    assert rows["Id"][:20] not in crumbs
    assert ">BOUNCED</span>" in page
