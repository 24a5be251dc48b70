"""The journal in a real browser: search → detail → re-rendered email → resend with a reason."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from templates_admin.models import EmailAction
from tests.journal_factory import BASE_TIME, journal_row, put_rows, send_through_pipeline

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def sent(aws):
    aws.load_samples()
    send_through_pipeline(
        aws,
        {
            "messageId": "added-to-team",
            "recipients": [{"email": "Kim@Example.com"}],
            "context": {"teamName": "Curators", "host": "app.test", "sessionToken": "s3cr3t"},
        },
    )
    return aws


def test_support_lead_finds_the_email_views_it_and_resends_it(login, make_user, live_server, sent):
    page = login(make_user("Support leads"))
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security" in m.text else 0)

    page.click("text=Email journal")
    page.fill("#id_q", "kim@EXAMPLE.com")
    page.click("#journal-search-form input[type=submit]")
    row = page.locator("tr.journal-row")
    expect(row).to_have_count(1)
    assert "SENT" in row.inner_text() and "default" in row.inner_text()
    assert "UTC" in row.locator("time").get_attribute("title")

    row.locator("a").first.click()
    assert "Accepted by SES at" in page.locator("#journal-status").inner_text()
    assert "s3cr3t" not in page.content()

    page.click("#journal-email-link")
    frame = page.frame_locator("#journal-email-frame")
    assert "Welcome to Curators" in frame.locator("h1").inner_text()
    assert page.locator("#journal-email-frame").get_attribute("sandbox") == ""
    assert violations == []
    page.go_back()

    page.click("#journal-resend-link")
    page.click("#journal-resend-submit")  # no reason: the browser's `required` stops it
    assert EmailAction.objects.count() == 0
    page.fill("#id_reason", "Kim says it never arrived")
    page.click("#journal-resend-submit")

    assert "Resent: queued as SQS message" in page.locator(".messagelist").inner_text()
    assert "Kim says it never arrived" in page.locator("#journal-resends").inner_text()
    action = EmailAction.objects.get()
    (message,) = sent.queue_messages(sent.queue_url)
    assert json.loads(message["Body"])["dedupeId"] == action.dedupe_id

    send_through_pipeline(sent)
    page.click("#journal-resends a")
    assert "Resent from" in page.locator("#journal-resent-from").inner_text()
    assert "Accepted by SES at" in page.locator("#journal-status").inner_text()


def test_support_pages_through_results_and_cannot_resend(login, make_user, live_server, aws):
    put_rows(
        aws.dynamodb,
        "email-journal",
        [journal_row("lee@example.com", at=BASE_TIME + i) for i in range(55)],
    )
    page = login(make_user("Support"))
    page.goto(f"{live_server.url}/admin/templates_admin/emailjournalpage/?q=lee@example.com")
    expect(page.locator("tr.journal-row")).to_have_count(50)

    page.click("#journal-older")
    expect(page.locator("tr.journal-row")).to_have_count(5)
    page.click("#journal-newer")
    expect(page.locator("tr.journal-row")).to_have_count(50)

    page.locator("tr.journal-row a").first.click()
    assert page.locator("#journal-status").is_visible()
    expect(page.locator("#journal-resend-link")).to_have_count(0)
