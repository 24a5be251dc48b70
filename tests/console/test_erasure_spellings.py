"""Issue 35, finding 3: erasing ``dana@example.com`` removes every journal row of that mailbox,
whatever spelling it was sent to (``address_key``, the one normaliser, decides which spellings
are the mailbox). The rows are written by the real consumer from the queue, or as the Go consumer
and earlier versions wrote them; the erasure runs through ``manage.py erase_recipient``, on moto."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from tests.journal_factory import BASE_TIME, journal_row, put_rows, send_through_pipeline

pytestmark = pytest.mark.django_db

DANA = "dana@example.com"
JOURNAL = "email-journal"


def _sent(aws, *emails: str) -> None:
    """One request per address, through the queue and the real consumer (any outcome: SENT, or
    FAILED for an entry the contract refuses)."""
    aws.load_samples()
    requests = [
        {
            "messageId": "added-to-team",
            "dedupeId": f"spelling-{i}",
            "recipients": [{"email": email}, {"email": "kim@example.com"}],
            "context": {"teamName": "Ops", "administrator": "Ann"},
        }
        for i, email in enumerate(emails)
    ]
    send_through_pipeline(aws, *requests)


def _recipients(aws) -> list[str]:
    items = aws.dynamodb.scan(TableName=JOURNAL)["Items"]
    return sorted(item["Recipient"]["S"] for item in items)


def _erase(address: str = DANA) -> str:
    out = io.StringIO()
    call_command("erase_recipient", address, "--yes", stdout=out)
    return out.getvalue()


def test_a_row_sent_to_the_quoted_local_part_is_erased(aws):
    _sent(aws, '"dana"@example.com')
    assert _recipients(aws) == ['"dana"@example.com', "kim@example.com"]
    _erase()
    assert _recipients(aws) == ["kim@example.com"]


def test_rows_sent_with_the_domain_in_capitals_are_erased_the_go_consumers_too(aws):
    # The producer spells her Dana@EXAMPLE.COM; while both consumers ran, the Go one took a copy
    # (its row keeps that spelling exactly, without RecipientKey).
    _sent(aws, "Dana@EXAMPLE.COM")
    go_row = journal_row("Dana@EXAMPLE.COM", at=BASE_TIME, go_row=True)
    put_rows(aws.dynamodb, JOURNAL, [go_row])
    printed = _erase()
    assert _recipients(aws) == ["kim@example.com"]
    assert "removed 1 journal row(s) written by the Go consumer" in printed


def test_a_failed_row_of_a_display_name_form_is_erased(aws):
    # The contract refuses a named address in "email"; the refused entry still gets its FAILED
    # row, which names the address as the producer wrote it.
    _sent(aws, "Dana Example <dana@example.com>")
    assert "Dana Example <dana@example.com>" in _recipients(aws)
    _erase()
    assert _recipients(aws) == ["kim@example.com"]


def test_a_quoted_row_written_before_recipient_key_was_the_address_key_is_erased(aws):
    # Rows written before this version keyed RecipientKey by the lowercased spelling.
    legacy = journal_row('"Dana"@Example.com', at=BASE_TIME, RecipientKey='"dana"@example.com')
    other = journal_row("kim@example.com", at=BASE_TIME)
    put_rows(aws.dynamodb, JOURNAL, [legacy, other])
    printed = _erase("Dana@example.com")
    assert _recipients(aws) == ["kim@example.com"]
    assert "removed 1 journal row(s) written by emailops" in printed


def test_another_mailbox_that_needs_its_quotes_is_left_alone(aws):
    # "dana x"@example.com is not dana@example.com (address_key keeps the quotes it needs).
    _sent(aws, '"dana x"@example.com', DANA)
    _erase()
    assert _recipients(aws) == ['"dana x"@example.com', "kim@example.com", "kim@example.com"]


def test_the_apis_reads_of_the_quoted_spelling_are_erased(aws):
    from audit.models import JournalReadAudit

    for key in (
        'welcome-1:"dana"@example.com',
        "welcome-2:Dana@EXAMPLE.com",
        "welcome-3:kim@x.org",
    ):
        JournalReadAudit.objects.create(channel="api", action="send", query=key, actor="api:1")
    printed = _erase()
    assert "removed 2 API read-audit entry(ies) naming the address" in printed
    assert list(JournalReadAudit.objects.values_list("query", flat=True)) == ["welcome-3:kim@x.org"]
