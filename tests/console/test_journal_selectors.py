"""Selectors and the resend service, against moto: what a search is taken for, cursors, entries."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.core import signing
from django.core.exceptions import PermissionDenied, ValidationError

from emailops import container
from emailops.core.errors import EmailOpsError
from templates_admin.journal import selectors
from templates_admin.journal.selectors import (
    InvalidCursor,
    JournalSearchError,
    SearchKind,
    journal_entry,
    journal_search,
)
from templates_admin.journal.services import email_resend
from templates_admin.models import EmailAction
from tests.journal_factory import BASE_TIME, journal_row, put_rows, queue_visibility

pytestmark = pytest.mark.django_db


@pytest.fixture
def rows(aws):
    rows = [journal_row("gil@example.com", at=BASE_TIME + i) for i in range(3)]
    rows.append(journal_row("gil@example.com", at=BASE_TIME + 9, key="signup-7:gil@example.com"))
    put_rows(aws.dynamodb, "email-journal", rows)
    return rows


def test_an_address_is_a_recipient_search(rows):
    result = journal_search(adapters=container.current(), query="  Gil@Example.com ")
    assert result.kind is SearchKind.RECIPIENT and len(result.rows) == 4


def test_a_dedupe_key_with_an_address_in_it_is_an_id_lookup(rows):
    result = journal_search(
        adapters=container.current(), query="signup-7:gil@example.com", status="SENT"
    )
    assert result.kind is SearchKind.ID and [r.key for r in result.rows] == [rows[3]["Id"]]
    assert result.filters_ignored


def test_an_unknown_id_is_looked_up_as_both_kinds(aws):
    result = journal_search(adapters=container.current(), query="f" * 64)
    assert result.kind is SearchKind.ID_OR_SES_MESSAGE_ID and result.rows == []
    assert [run.operation for run in result.runs] == ["GetItem", "Query"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"query": " "}, "type an email address"),
        ({"query": "a@b.org", "status": "DELIVERED"}, "status must be one of"),
        ({"query": "a@b.org", "limit": 0}, "limit must be between"),
        ({"query": "a@b.org", "since": datetime(2026, 1, 2)}, "time zone"),
        (
            {
                "query": "a@b.org",
                "since": datetime(2026, 1, 2, tzinfo=UTC),
                "until": datetime(2026, 1, 1, tzinfo=UTC),
            },
            "ends before it starts",
        ),
    ],
)
def test_bad_input_is_refused_before_any_call(kwargs, message):
    with pytest.raises(JournalSearchError, match=message):
        journal_search(
            adapters=container.current(), **kwargs
        )  # no `aws` fixture: a call to AWS would fail differently


def test_cursors_are_signed_and_tied_to_their_search(rows):
    page = journal_search(adapters=container.current(), query="gil@example.com", limit=2)
    cursor = page.next_cursor
    assert cursor and "gil@example.com" not in cursor  # opaque

    assert (
        len(
            journal_search(
                adapters=container.current(), query="gil@example.com", limit=2, cursor=cursor
            ).rows
        )
        == 2
    )
    with pytest.raises(InvalidCursor, match="damaged or was altered"):
        journal_search(
            adapters=container.current(), query="gil@example.com", cursor=cursor[:-4] + "AAAA"
        )
    with pytest.raises(InvalidCursor, match="different search"):
        journal_search(
            adapters=container.current(), query="gil@example.com", status="SENT", cursor=cursor
        )
    forged = signing.dumps({"f": "x"}, salt="another.salt")
    with pytest.raises(InvalidCursor):
        journal_search(adapters=container.current(), query="gil@example.com", cursor=forged)


def test_a_go_rows_claim_lasts_the_consumers_lease_read_once_from_the_queue(
    aws, settings, monkeypatch
):
    """CLAIM_LEASE_SECONDS when set (no SQS call), else the queue's visibility timeout, as the
    consumer claims: read once per container, not on every page."""
    from emailops.aws.sqs import SqsQueue

    row = journal_row("hal@example.com", at=BASE_TIME, status="QUEUED", go_row=True)
    put_rows(aws.dynamodb, "email-journal", [row])
    describe, asked = SqsQueue.describe, []
    monkeypatch.setattr(SqsQueue, "describe", lambda self: asked.append(1) or describe(self))

    settings.CLAIM_LEASE_SECONDS = 45
    assert (
        journal_entry(adapters=container.current(), key=row["Id"]).lease_ends_at == BASE_TIME + 45
    )
    assert asked == []
    settings.CLAIM_LEASE_SECONDS = 0
    for _ in range(2):
        assert journal_entry(
            adapters=container.current(), key=row["Id"]
        ).lease_ends_at == BASE_TIME + queue_visibility(aws)
    assert asked == [1]


def test_resend_requires_permission_reason_and_a_row(rows, make_user):
    lead, support = make_user("Support leads"), make_user("Support")

    with pytest.raises(PermissionDenied):
        email_resend(adapters=container.current(), key=rows[0]["Id"], reason="x", user=support)
    with pytest.raises(ValidationError, match="reason"):
        email_resend(adapters=container.current(), key=rows[0]["Id"], reason="  ", user=lead)
    with pytest.raises(ValidationError, match="no journal row"):
        email_resend(adapters=container.current(), key="nope", reason="x", user=lead)
    assert not EmailAction.objects.exists()


def test_resend_of_a_request_that_cannot_parse_is_refused(aws, make_user):
    row = journal_row("ivy@example.com", at=BASE_TIME, Context={"organizationId": "abc"})
    put_rows(aws.dynamodb, "email-journal", [row])

    with pytest.raises(ValidationError, match="organizationId"):
        email_resend(
            adapters=container.current(), key=row["Id"], reason="x", user=make_user("Support leads")
        )


def test_a_resend_the_queue_refuses_leaves_no_audit_row(rows, make_user, settings):
    settings.EMAIL_SERVICE_QUEUE_URL += "-missing"
    container.reset()

    with pytest.raises(EmailOpsError):
        email_resend(
            adapters=container.current(),
            key=rows[0]["Id"],
            reason="x",
            user=make_user("Support leads"),
        )
    assert not EmailAction.objects.exists()


def test_entries_link_resends_both_ways(rows, aws, make_user):
    action = email_resend(
        adapters=container.current(),
        key=rows[0]["Id"],
        reason="lost it",
        user=make_user("Support leads"),
    )

    original = journal_entry(adapters=container.current(), key=rows[0]["Id"])
    new = journal_entry(adapters=container.current(), key=action.journal_key)

    assert original.resends == [action] and original.resent_from is None
    assert new.row is None and new.resent_from == action
    (message,) = aws.queue_messages(aws.queue_url)
    assert json.loads(message["Body"])["dedupeId"] == action.dedupe_id
    assert (
        selectors.journal_search(adapters=container.current(), query=action.journal_key).rows == []
    )  # not consumed yet
