"""Journal pages through Django's test client, over rows the real consumer wrote into moto."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from django.urls import reverse

from audit.models import JournalReadAudit
from emailops import container
from templates_admin.models import EmailAction
from tests.journal_factory import BASE_TIME, journal_row, put_rows, send_through_pipeline

pytestmark = pytest.mark.django_db

BASE = "/admin/templates_admin/emailjournalpage/"
CONTEXT = {
    "teamName": "Curators",
    "host": "app.pennsieve.test",
    "organizationNodeId": "N:organization:1",
    "inviteToken": "tok-123-secret-value",
}


@pytest.fixture
def sent(aws):
    """One SENT row for Dana (mixed-case address) and one permanently FAILED row (no mapping)."""
    aws.load_samples()
    send_through_pipeline(
        aws,
        {
            "messageId": "added-to-team",
            "recipients": [{"email": "Dana@Example.com"}],
            "context": CONTEXT,
        },
        {"messageId": "no-such-message", "recipients": [{"email": "dana@example.com"}]},
    )
    return aws


@pytest.fixture
def support(client, make_user):
    client.force_login(make_user("Support"))
    return client


@pytest.fixture
def lead(client, make_user):
    client.force_login(make_user("Support leads"))
    return client


def text(response) -> str:
    return unescape(response.content.decode())


def search(client, **params):
    return client.get(BASE, params)


def entry_url(key: str, suffix: str = "") -> str:
    return reverse("admin:templates_admin_journal_detail", args=[key]) + suffix


def rows_for(address: str) -> list[dict]:
    """The rows as stored (attribute names), to compare pages with."""
    from templates_admin.journal.selectors import journal_search

    reader = container.current().journal_reader
    return [
        reader.read_stored(row.key).attributes.as_dict()
        for row in journal_search(adapters=container.current(), query=address).rows
    ]


def test_detail_url_is_the_one_other_pages_link_to():
    assert entry_url("abc:x@y.org") == f"{BASE}entry/abc:x@y.org/"


def test_search_by_address_in_any_case_lists_rows_newest_first(sent, support):
    response = search(support, q="DANA@example.COM")

    page = text(response)
    assert response.status_code == 200
    assert page.count('class="journal-row"') == 2
    assert page.index("no-such-message") < page.index("added-to-team")  # newest first
    assert "You were added to the team Curators" in page  # subject
    assert ">default<" in page  # branding
    assert "look up template mapping" in page  # error excerpt
    assert re.search(r'<time title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC">', page)
    for row in rows_for("dana@example.com"):
        assert entry_url(row["Id"]) in page


def test_search_filters_by_status_and_message_id(sent, support):
    failed = text(search(support, q="dana@example.com", status="FAILED"))
    assert failed.count('class="journal-row"') == 1 and "no-such-message" in failed

    by_message = text(search(support, q="dana@example.com", message_id="added-to-team"))
    assert by_message.count('class="journal-row"') == 1 and "Curators" in by_message


def test_search_by_journal_id_and_by_ses_message_id(sent, support):
    row = next(r for r in rows_for("dana@example.com") if r["Status"] == "SENT")

    by_id = text(search(support, q=row["Id"]))
    by_ses = text(search(support, q=row["SesMessageId"]))

    assert "Searched as <strong>journal Id</strong>" in by_id and by_id.count("journal-row") == 1
    assert "Searched as <strong>SES message id</strong>" in by_ses
    assert entry_url(row["Id"]) in by_ses


def test_an_empty_result_explains_itself_and_shows_the_queries(sent, support):
    page = text(search(support, q="nobody@example.com", status="SENT"))

    assert "No journal row for this address." in page
    assert "never queued" in page and "producer" in page and "dead-letter queue" in page
    assert 'RecipientKeySentAtIndex: RecipientKey = "nobody@example.com"' in page
    assert 'filter Status = "SENT"' in page
    assert 'RecipientSentAtIndex: Recipient = "nobody@example.com"' in page


def test_pages_of_fifty_with_older_and_newer_links(aws, support):
    put_rows(
        aws.dynamodb,
        "email-journal",
        [journal_row("many@example.com", at=BASE_TIME + i) for i in range(60)],
    )

    first = text(search(support, q="many@example.com"))
    older = re.search(r'href="(\?[^"]+)"[^>]*id="journal-older"', first)
    assert first.count("journal-row") == 50 and older and 'id="journal-newer"' not in first

    second = text(support.get(BASE + older.group(1)))
    newer = re.search(r'href="(\?[^"]+)"[^>]*id="journal-newer"', second)
    assert second.count("journal-row") == 10 and newer

    back = text(support.get(BASE + newer.group(1)))
    assert back.count("journal-row") == 50 and 'id="journal-newer"' not in back


def test_a_tampered_or_foreign_cursor_gets_a_clear_error(aws, support):
    put_rows(
        aws.dynamodb,
        "email-journal",
        [journal_row("many@example.com", at=BASE_TIME + i) for i in range(60)],
    )
    first = text(search(support, q="many@example.com"))
    cursor = re.search(r"cursor=([^\"&]+)", first).group(1)

    tampered = search(support, q="many@example.com", cursor=cursor[:-3] + "abc")
    foreign = search(support, q="other@example.com", cursor=cursor.replace("%3A", ":"))

    assert tampered.status_code == 400 and "damaged or was altered" in text(tampered)
    assert foreign.status_code == 400 and "belongs to a different search" in text(foreign)


def test_a_missing_index_is_named_on_the_page(aws, support, settings):
    aws.dynamodb.create_table(
        TableName="bare-journal",
        KeySchema=[{"AttributeName": "Id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "Id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    settings.JOURNAL_TABLE = "bare-journal"
    container.reset()

    page = text(search(support, q="0100018c-not-a-key"))

    assert "no index SesMessageIdIndex" in page and "bootstrap_aws" in page


def test_detail_shows_every_attribute_masks_secrets_and_says_sent(sent, support):
    row = next(r for r in rows_for("dana@example.com") if r["Status"] == "SENT")

    page = text(support.get(entry_url(row["Id"])))

    for name in ("Id", "MessageId", "Recipient", "Status", "SesMessageId", "ExpiresAt", "Context"):
        assert f'<th scope="row">{name}</th>' in page
    assert "Accepted by SES at" in page and "no delivery report yet" in page
    assert "tok-123-secret-value" not in page and "••••••" in page
    assert "Curators" in page  # context values that are not sensitive
    assert "DynamoDB deletes the row after" in page
    assert f"{BASE}?q=Dana%40Example.com" in page  # every email for this recipient
    assert entry_url(row["Id"], "email/") in page


def test_detail_of_a_permanent_failure_says_dead_letter_queue(sent, support):
    row = next(r for r in rows_for("dana@example.com") if r["Status"] == "FAILED")

    page = text(support.get(entry_url(row["Id"])))

    assert "Failed permanently" in page and "no such messageId" in page
    assert "moved to the dead-letter queue; once the mapping exists, redrive it" in page


def test_detail_of_a_stuck_claim(aws, support):
    row = journal_row("stuck@example.com", at=BASE_TIME, status="QUEUED")
    put_rows(aws.dynamodb, "email-journal", [row])

    page = text(support.get(entry_url(row["Id"])))

    assert "Stuck since" in page and "retried when SQS delivers the request again" in page


def test_detail_of_an_unknown_key_explains_and_is_404(aws, support):
    response = support.get(entry_url("f" * 64))
    assert response.status_code == 404
    assert "never queued" in text(response)


def test_view_email_is_a_labelled_rerender_in_a_sandboxed_frame(sent, support):
    row = next(r for r in rows_for("dana@example.com") if r["Status"] == "SENT")

    response = support.get(entry_url(row["Id"], "email/"))

    page = response.content.decode()
    csp = response["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp
    frame = re.search(r"<iframe[^>]*>", page).group(0)
    assert " sandbox " in frame and "allow-scripts" not in frame and "srcdoc=" in frame
    assert "Welcome to Curators" in unescape(frame)
    assert "tok-123-secret-value" not in page
    assert "A re-render, not a copy of what was sent" in page
    # The template has not changed since: the render is of the version the row records.
    assert "the template version the email was sent with" in page


def test_view_email_of_a_template_that_recurses_says_why_not_a_500(sent, support):
    """A macro calling itself used to raise RecursionError through the re-render: a 500."""
    row = next(r for r in rows_for("dana@example.com") if r["Status"] == "SENT")
    container.current().template_store.write_template(
        "default/added-to-team.html", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"
    )

    response = support.get(entry_url(row["Id"], "email/"))

    assert response.status_code == 200
    assert "It cannot be rendered today" in text(response)
    assert "calls nested more than 50 deep" in text(response)


def test_resend_confirms_then_enqueues_with_a_fresh_dedupe_id_and_audits(sent, lead):
    row = next(r for r in rows_for("dana@example.com") if r["Status"] == "SENT")
    url = entry_url(row["Id"], "resend/")
    confirm = text(lead.get(url))
    dedupe_id = re.search(r'name="dedupe_id" value="([^"]+)"', confirm).group(1)
    assert container.current().queue.describe() and sent.queue_messages(sent.queue_url) == []

    refused = lead.post(url, {"reason": "  ", "dedupe_id": dedupe_id})
    assert refused.status_code == 200 and "Say why you are resending" in text(refused)
    response = lead.post(url, {"reason": "Dana never got it", "dedupe_id": dedupe_id})
    lead.post(url, {"reason": "Dana never got it", "dedupe_id": dedupe_id})  # a double submit

    assert response.status_code == 302
    (message,) = sent.queue_messages(sent.queue_url)
    body = json.loads(message["Body"])
    assert body == {
        "messageId": "added-to-team",
        "recipients": [{"email": "Dana@Example.com"}],
        "context": CONTEXT,
        "dedupeId": dedupe_id,
    }
    action = EmailAction.objects.get()
    assert (action.kind, action.reason, action.original_key) == (
        "resend",
        "Dana never got it",
        row["Id"],
    )
    assert action.journal_key == f"{dedupe_id}:Dana@Example.com"
    assert action.sqs_message_id == message["MessageId"]

    original = text(lead.get(entry_url(row["Id"])))
    assert "Dana never got it" in original and entry_url(action.journal_key) in original
    pending = lead.get(entry_url(action.journal_key))
    assert pending.status_code == 200 and "No journal row yet" in text(pending)

    send_through_pipeline(sent)
    resent = text(lead.get(entry_url(action.journal_key)))
    assert "Resent from" in resent and entry_url(row["Id"]) in resent
    assert "Accepted by SES at" in resent
    assert len(sent.sent_emails()) == 2


def test_keys_with_slashes_and_odd_characters_have_working_pages(aws, lead):
    row = journal_row("odd@example.com", at=BASE_TIME, key="batch/7 ?x#1:odd@example.com")
    put_rows(aws.dynamodb, "email-journal", [row])

    for suffix in ("", "email/", "resend/"):
        response = lead.get(entry_url(row["Id"], suffix))
        assert response.status_code == 200, suffix
    assert "batch/7 ?x#1:odd@example.com" in text(lead.get(entry_url(row["Id"])))


@pytest.mark.parametrize("suffix", ["", "email/", "resend/"])
def test_pages_show_aws_trouble_as_a_page_not_a_server_error(aws, lead, settings, suffix):
    settings.JOURNAL_TABLE = "no-such-table"
    container.reset()
    response = lead.get(entry_url("some-key", suffix))
    assert response.status_code == 503
    assert "could not reach" in text(response) and "read journal row" in text(response)
    assert "default-src 'none'" in response["Content-Security-Policy"]


def test_the_resend_page_is_an_audited_read(sent, lead):
    row = next(r for r in rows_for("dana@example.com") if r["Status"] == "SENT")

    assert lead.get(entry_url(row["Id"], "resend/")).status_code == 200

    audit = JournalReadAudit.objects.get(action="resend")
    assert (audit.channel, audit.query, audit.actor) == ("console", row["Id"], "support-leads")
