"""A log-only row (SENT + LoggedOnly, as the Go service's send controls write it) reads as not
delivered everywhere, with its reason; a Go row, which records none, as reason unknown."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.urls import reverse

from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = pytest.mark.django_db

BASE = "/admin/templates_admin/emailjournalpage/"

OURS = journal_row(
    "off@example.com", at=BASE_TIME, LoggedOnly=True, LoggedOnlyReason="template-off"
)
GOS = journal_row("go@example.com", at=BASE_TIME, LoggedOnly=True)


@pytest.fixture
def support(aws, client, make_user):
    put_rows(aws.dynamodb, "email-journal", [OURS, GOS])
    client.force_login(make_user("Support"))
    return client


def test_the_result_list_says_not_delivered_with_the_reason_never_sent(support):
    page = unescape(support.get(BASE, {"q": "off@example.com"}).content.decode())

    badge = re.search(r'<span class="journal-badge ([^"]*)">([^<]*)</span>', page)
    assert badge and badge.group(2) == "NOT DELIVERED"
    assert "not delivered: sending is off for this template" in page
    assert "accepted by SES" not in page


def test_the_row_page_explains_a_go_log_only_row_as_reason_unknown(support):
    url = reverse("admin:templates_admin_journal_detail", args=[GOS["Id"]])
    page = unescape(support.get(url).content.decode())

    assert "Not delivered: logged only, reason unknown." in page
