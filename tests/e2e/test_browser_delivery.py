"""In a real browser: a Support person asks "did they get it?" and the journal answers in words."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from emailops import container
from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Seeded as consume_ses_events writes it after a hard bounce.
BOUNCED = journal_row(
    "ned@example.com",
    at=BASE_TIME,
    DeliveryStatus="BOUNCED",
    DeliveryStatusAt="2026-05-28T20:26:44.000Z",
    BounceType="Permanent",
    BounceSubType="General",
    DiagnosticCode="smtp; 550 5.1.1 <ned@example.com>: Recipient address rejected: User unknown",
    DeliveryEvents=[
        {"Type": "Send", "At": "2026-05-28T20:26:41.000Z", "Id": "ev-1", "Summary": "sent"},
        {"Type": "Bounce", "At": "2026-05-28T20:26:44.000Z", "Id": "ev-2",
         "Summary": "permanent bounce: 550 5.1.1 user unknown"},
    ],
)  # fmt: skip


def test_support_searches_an_address_and_reads_why_it_bounced(login, make_user, live_server, aws):
    put_rows(aws.dynamodb, "email-journal", [BOUNCED])
    container.current().suppression_list.add(
        "ned@example.com",
        reason="BOUNCE",
        detail="Permanent/General: 550 5.1.1 user unknown",
        source="ev-2",
        now=BASE_TIME + 4,
    )
    page = login(make_user("Support"))

    page.click("text=Email journal")
    page.fill("#id_q", "Ned@Example.com")
    page.click("#journal-search-form input[type=submit]")
    row = page.locator("tr.journal-row")
    expect(row).to_have_count(1)
    assert "bounced: mailbox does not exist" in row.locator("td.journal-delivery").inner_text()

    row.locator("a").first.click()
    status = page.locator("#journal-status").inner_text()
    assert "Bounced: mailbox does not exist." in status and "550 5.1.1" in status
    events = page.locator("#journal-timeline tbody tr")
    expect(events).to_have_count(2)
    assert "Bounce" in events.nth(1).inner_text()

    page.click("#journal-suppression-link")  # Support may look, not remove
    assert "is suppressed: hard bounce" in page.locator("#suppression-status").inner_text()
    expect(page.locator("#suppression-remove-link")).to_have_count(0)
