"""End to end: `manage.py erase_recipient` against moto server removes every row of one address,
its Go-era rows, unmatched events and API read-audit entries included, keeps its suppression
entry, and leaves every other address's rows alone."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.e2e

UNMATCHED = "email-delivery-events-unmatched"
SUPPRESSION = "email-suppression"


@pytest.fixture(scope="module")
def e2e_stack_options() -> dict:
    """The events resources too: the unmatched-events table is one of the things erased."""
    return {
        "bucket": "emailops-erase-e2e",
        "events_queue": "email-ses-events-erase",
        "extra_env": {"SES_EVENTS_VERIFY_SIGNATURES": "false"},
    }


@pytest.fixture
def db_env(tmp_path, e2e_stack) -> dict[str, str]:
    return e2e_stack.console_database(tmp_path / "console.sqlite3")


def _go_row(stack, key: str, recipient: str, at: int) -> None:
    # As the Go consumer wrote it: no RecipientKey, no ClaimExpiresAt.
    stack.put_row(
        Id=key,
        MessageId="added-to-team",
        Recipient=recipient,
        Status="SENT",
        Timestamp=at,
        SentAtKey=f"{at:020d}",
        SesMessageId=f"go-{key}",
    )


def _unmatched(stack, event_id: str, recipient: str) -> None:
    stack.dynamodb.put_item(
        TableName=UNMATCHED,
        Item={
            "Id": {"S": event_id},
            "EventType": {"S": "Bounce"},
            "Recipients": {"L": [{"S": recipient}]},
        },
    )


def test_erase_recipient_removes_every_row_of_one_address_and_nothing_else(e2e_stack, db_env):
    stack = e2e_stack
    for email in ("Pat@Example.com", "other@example.com"):
        stack.enqueue(
            [
                {
                    "messageId": "added-to-team",
                    "dedupeId": f"erase-{email.lower()}",
                    "recipients": [{"email": email}],
                    "context": {"teamName": "Ops", "administrator": "Ann"},
                }
            ]
        )
    stack.consume()
    new_pat, new_other = (
        "erase-pat@example.com:Pat@Example.com",
        "erase-other@example.com:other@example.com",
    )
    assert stack.row(new_pat)["Status"] == stack.row(new_other)["Status"] == "SENT"
    now = int(time.time()) - 86400 * 30
    _go_row(stack, "go-1:pat@example.com", "pat@example.com", now)
    _go_row(stack, "go-2:Pat@Example.com", "Pat@Example.com", now + 1)
    _go_row(stack, "go-3:other@example.com", "other@example.com", now + 2)
    _unmatched(stack, "evt-pat", "PAT@example.com")
    _unmatched(stack, "evt-other", "other@example.com")
    stack.dynamodb.put_item(
        TableName=SUPPRESSION,
        Item={"Email": {"S": "pat@example.com"}, "Reason": {"S": "manual"}},
    )
    stack.manage(
        "shell",
        "-c",
        "from templates_admin.models import JournalReadAudit as A; "
        "A.objects.create(channel='api', action='get', actor='t', query='api:1:x:pat@example.com'); "
        "A.objects.create(channel='api', action='get', actor='t', query='api:1:x:other@example.com')",
        env=db_env,
    )

    erased = stack.manage("erase_recipient", "Pat@Example.com", "--yes", env=db_env).stdout

    assert "removed 1 journal row(s) written by emailops" in erased
    assert "removed 2 journal row(s) written by the Go consumer" in erased
    assert "removed 1 unmatched delivery event(s)" in erased
    assert "removed 1 API read-audit entry(ies)" in erased
    assert "kept its suppression entry" in erased
    statuses = stack.journal_statuses()
    assert not {new_pat, "go-1:pat@example.com", "go-2:Pat@Example.com"} & set(statuses)
    assert {new_other, "go-3:other@example.com"} <= set(statuses)
    assert stack.item(UNMATCHED, {"Id": "evt-pat"}) is None
    assert stack.item(UNMATCHED, {"Id": "evt-other"}) is not None
    assert stack.item(SUPPRESSION, {"Email": "pat@example.com"}) is not None
    left = stack.manage(
        "shell",
        "-c",
        "from templates_admin.models import JournalReadAudit as A, Job; "
        "print(sorted(A.objects.values_list('query', flat=True))); "
        "j = Job.objects.get(); print(j.kind, j.state, j.origin.startswith('cli:'), j.inputs['address'])",
        env=db_env,
    ).stdout
    assert "['api:1:x:other@example.com']" in left
    assert "erase_recipient SUCCEEDED True Pat@Example.com" in left

    again = stack.manage("erase_recipient", "pat@example.com", "--yes", env=db_env).stdout
    assert "removed 0 journal row(s) written by emailops" in again  # safe to repeat
