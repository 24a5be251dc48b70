"""A walk through the console in a real browser as each of its people (an admin, a Support user,
a Template owner) over the pages issue 25 names, checking the texts and elements a new user would
trip over, with a screenshot of each stop under artifacts/screenshots/ (gitignored; CI keeps it).

- an empty search says why (a filter hid the row, with a link without it), never "never queued";
- a bounced row wears BOUNCED with "accepted by SES" under it; the row page's breadcrumb is
  "messageId → recipient";
- a FAILED row for an unknown messageId says what to do, with no resend or "View email" offered
  to those who cannot use them; a refused page is a console page naming the group;
- the front page offers "Look and redrive" only to who may redrive; /favicon.ico is no 404.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from playwright.sync_api import expect

from emailops import container
from monitoring.models import OpsReading
from templates_admin.journal.selectors import journal_search
from tests.journal_factory import BASE_TIME, journal_row, put_rows, send_through_pipeline

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

JOURNAL = "/admin/templates_admin/emailjournalpage/"
MAPPINGS = "/admin/templates_admin/templatemappingpage/"
AUDIT = "/admin/templates_admin/journalreadaudit/"


@pytest.fixture
def console(aws):
    """Sample templates; a bounced row to bounce@example.com; a FAILED row (unknown messageId)
    to kim@example.com; beat's last reading found one dead letter."""
    aws.load_samples()
    bounced = journal_row(
        "bounce@example.com",
        at=BASE_TIME,
        DeliveryStatus="BOUNCED",
        BounceType="Permanent",
        BounceSubType="General",
    )
    put_rows(aws.dynamodb, "email-journal", [bounced])
    send_through_pipeline(
        aws, {"messageId": "no-such-message", "recipients": [{"email": "kim@example.com"}]}
    )
    OpsReading.objects.create(name="dlq_depth", value={"depth": 1}, at=datetime.now(UTC))
    return {
        "bounced": bounced["Id"],
        "failed": journal_search(adapters=container.current(), query="kim@example.com").rows[0].key,
    }


def _open(page, live_server, path: str):
    response = page.goto(f"{live_server.url}{path}")
    return response


def test_support_walk(console, login, make_user, live_server, screenshot):
    page = login(make_user("Support"))
    not_found: list[str] = []
    page.on("response", lambda r: not_found.append(r.url) if r.status == 404 else None)

    # The front page: Support may look at the dead-letter queue, not redrive it.
    banner = page.locator("#ops-banner")
    expect(banner).to_contain_text("1 request on the dead-letter queue")
    expect(page.locator("#ops-banner-dlq-link")).to_have_text("See what is there")
    expect(banner).not_to_contain_text("Look and redrive")
    screenshot(page, "support-front-page")

    # A filter that hides the row says so, and the link without it shows the row.
    _open(page, live_server, f"{JOURNAL}?q=bounce%40example.com&delivery=DELIVERED")
    expect(page.locator("#journal-empty-filtered")).to_contain_text(
        "The filters hid 1 row to this address."
    )
    expect(page.locator("#journal-empty")).not_to_contain_text("never queued")
    screenshot(page, "support-filter-hid-a-row")
    page.click("#journal-drop-filters")
    row = page.locator("tr.journal-row")
    expect(row).to_have_count(1)
    expect(row.locator(".journal-badge")).to_have_text("BOUNCED")
    expect(row.locator(".journal-pill-secondary")).to_have_text("accepted by SES")
    screenshot(page, "support-bounced-pill")

    # The row page: breadcrumb "messageId → recipient", the outcome's pill.
    row.locator("a").first.click()
    expect(page.locator(".breadcrumbs")).to_contain_text("added-to-team → bounce@example.com")
    expect(page.locator(".breadcrumbs")).not_to_contain_text(console["bounced"][:20])
    expect(page.locator("#journal-status .journal-badge")).to_have_text("BOUNCED")
    screenshot(page, "support-row-page")

    # A FAILED row for an unknown messageId: what to do instead, and nothing Support cannot use.
    _open(page, live_server, f"{JOURNAL}entry/{console['failed']}/")
    status = page.locator("#journal-status")
    expect(status).to_contain_text("no template mapping has the messageId 'no-such-message'")
    expect(status).to_contain_text("a Template owner adds or fixes the mapping")
    expect(status).not_to_contain_text("resend this email from here")
    expect(page.locator("#journal-resend-link")).to_have_count(0)
    expect(page.locator("#journal-email-link")).to_have_count(0)
    screenshot(page, "support-failed-unknown-message-id")

    # Refused pages: the console's navigation and the group that grants access.
    for path, group in ((MAPPINGS, "Template owners"), (AUDIT, "Support leads")):
        response = _open(page, live_server, path)
        assert response.status == 403
        expect(page.locator("#console-refused")).to_contain_text(f"for the {group} group")
        expect(page.locator("#header")).to_be_visible()
        expect(page.locator(".breadcrumbs a", has_text="Home")).to_be_visible()
    screenshot(page, "support-refused-journal-reads")

    favicon = page.request.get(f"{live_server.url}/favicon.ico")
    assert favicon.status == 200 and "svg" in favicon.headers["content-type"]
    assert not [url for url in not_found if "favicon" in url], not_found


def test_template_owner_walk(console, login, make_user, live_server, screenshot):
    page = login(make_user("Template owners"))

    expect(page.locator("#ops-banner-dlq-link")).to_have_text("Look and redrive")
    response = _open(page, live_server, MAPPINGS)
    assert response.status == 200
    expect(page.locator("#content")).to_contain_text("added-to-team")
    screenshot(page, "owner-mappings")

    response = _open(page, live_server, AUDIT)
    assert response.status == 403
    expect(page.locator("#console-refused")).to_contain_text("for the Support leads group")
    screenshot(page, "owner-refused-journal-reads")

    _open(page, live_server, f"{JOURNAL}entry/{console['failed']}/")
    expect(page.locator("#journal-status")).to_contain_text("a Template owner adds or fixes")
    expect(page.locator("#journal-email-link")).to_have_count(0)


def test_admin_walk(console, login, make_user, live_server, screenshot):
    page = login(make_user(superuser=True))

    expect(page.locator("#ops-banner-dlq-link")).to_have_text("Look and redrive")
    expect(page.locator("#account-figures")).to_be_visible()
    width = page.evaluate("() => document.getElementById('ops-dashboard').offsetWidth")
    assert width > 1000, width  # the screen's width, not Django's 600 px index column
    screenshot(page, "admin-front-page")

    _open(page, live_server, f"{JOURNAL}entry/{console['bounced']}/")
    expect(page.locator("#journal-resend-link")).to_be_visible()
    expect(page.locator("#journal-email-link")).to_be_visible()  # its mapping exists
    screenshot(page, "admin-row-page")

    _open(page, live_server, f"{JOURNAL}?q=bounce%40example.com&until=2026-01-01")
    expect(page.locator("#journal-empty-window")).to_contain_text(
        "The window ends before the oldest row's time"
    )
    expect(page.locator("#journal-drop-dates")).to_be_visible()
    screenshot(page, "admin-window-before-the-row")
