"""The journal pages answer "did they get it?" from the rows' delivery attributes."""

from __future__ import annotations

from html import unescape

import pytest
from django.urls import reverse

from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = pytest.mark.django_db

BASE = "/admin/templates_admin/emailjournalpage/"
BOUNCED = journal_row(
    "ivy@example.com",
    at=BASE_TIME,
    DeliveryStatus="BOUNCED",
    DeliveryStatusAt="2026-05-28T20:30:00.000Z",
    BounceType="Permanent",
    BounceSubType="General",
    DiagnosticCode="smtp; 550 5.1.1 <ivy@example.com>: Recipient address rejected: User unknown",
    DeliveryEvents=[
        {"Type": "Send", "At": "2026-05-28T20:26:41.000Z", "Id": "ev-send", "Summary": "sent"},
        {"Type": "Bounce", "At": "2026-05-28T20:30:00.000Z", "Id": "ev-bounce",
         "Summary": "permanent bounce (General): 550 5.1.1 user unknown"},
    ],
)  # fmt: skip
DELIVERED = journal_row(
    "ivy@example.com",
    at=BASE_TIME + 60,
    DeliveryStatus="DELIVERED",
    DeliveryStatusAt="2026-05-28T20:27:45.000Z",
)
PENDING = journal_row("ivy@example.com", at=BASE_TIME + 120)
SUPPRESSED = journal_row(
    "Ivy@Example.com",
    at=BASE_TIME + 180,
    status="SUPPRESSED",
    Error="hard bounce: Permanent/General: 550 5.1.1 user unknown",
)


@pytest.fixture
def rows(aws):
    put_rows(aws.dynamodb, "email-journal", [BOUNCED, DELIVERED, PENDING, SUPPRESSED])
    return aws


@pytest.fixture
def support(client, make_user):
    client.force_login(make_user("Support"))
    return client


def text(response) -> str:
    return unescape(response.content.decode())


def entry_url(key: str) -> str:
    return reverse("admin:templates_admin_journal_detail", args=[key])


def result_lines(page: str) -> list[str]:
    return page.split('<tr class="journal-row">')[1:]


def test_results_have_a_delivery_column_in_plain_words(rows, support):
    page = text(support.get(BASE, {"q": "ivy@example.com"}))

    newest_first = result_lines(page)
    assert '<th scope="col">Delivery</th>' in page
    assert "suppressed: never sent (hard bounce" in newest_first[0]
    assert "accepted by SES, no delivery report yet" in newest_first[1]
    assert "delivered" in newest_first[2] and "2026-05-28 20:27:45" in newest_first[2]
    assert "bounced: mailbox does not exist" in newest_first[3]


@pytest.mark.parametrize(
    "delivery, expected",
    [("BOUNCED", [BOUNCED]), ("DELIVERED", [DELIVERED]), ("NONE", [PENDING])],
)
def test_delivery_filter(rows, support, delivery, expected):
    page = text(support.get(BASE, {"q": "ivy@example.com", "delivery": delivery}))
    shown = result_lines(page)
    assert len(shown) == len(expected)
    for line, row in zip(shown, expected, strict=True):
        assert entry_url(row["Id"]) in line
    assert f'DeliveryStatus = "{delivery}"' in page or delivery == "NONE"


def test_detail_of_a_bounce_says_why_and_shows_the_timeline(rows, support):
    page = text(support.get(entry_url(BOUNCED["Id"])))

    status = page.split('id="journal-status"', 1)[1].split("</div>", 1)[0]
    assert "Bounced: mailbox does not exist." in status
    assert "Permanent/General" in status and "550 5.1.1" in status
    assert "suppression list" in status
    timeline = page.split('id="journal-timeline"', 1)[1].split("</table>", 1)[0]
    assert timeline.index("ev-send") < timeline.index("ev-bounce")
    assert "permanent bounce (General): 550 5.1.1 user unknown" in timeline
    assert "Accepted is not delivered" not in page


def test_detail_of_a_delivered_row(rows, support):
    page = text(support.get(entry_url(DELIVERED["Id"])))
    assert "Delivered at 2026-05-28 20:27:45 UTC: the recipient's mail server accepted it." in page
    assert 'id="journal-suppression-link"' not in page


def test_detail_of_a_sent_row_without_a_report(rows, support):
    page = text(support.get(entry_url(PENDING["Id"])))
    assert "no delivery report yet" in page and 'id="journal-no-events"' in page


def test_a_suppressed_row_links_to_its_suppression_entry(rows, support):
    page = text(support.get(entry_url(SUPPRESSED["Id"])))

    assert "Not sent: Ivy@Example.com is on the suppression list." in page
    link = reverse("admin:templates_admin_suppression_detail", args=["Ivy@Example.com"])
    assert f'href="{link}" id="journal-suppression-link"' in page
    assert support.get(link).status_code == 200


def test_a_permanent_bounce_links_to_the_suppression_entry_too(rows, support):
    page = text(support.get(entry_url(BOUNCED["Id"])))
    assert 'id="journal-suppression-link"' in page


def test_resend_to_a_suppressed_address_warns_first(rows, client, make_user):
    from emailops import container

    container.current().suppression_list.add(
        "ivy@example.com", reason="BOUNCE", detail="550 5.1.1", source="ev-bounce", now=BASE_TIME
    )
    client.force_login(make_user("Support leads"))

    suppressed = text(client.get(entry_url(BOUNCED["Id"]) + "resend/"))
    container.current().suppression_list.remove("ivy@example.com")
    clear = text(client.get(entry_url(BOUNCED["Id"]) + "resend/"))

    assert 'id="journal-resend-suppressed"' in suppressed
    assert "hard bounce: 550 5.1.1" in suppressed and "will not be sent" in suppressed
    assert 'id="journal-resend-suppressed"' not in clear
