"""The suppression store against moto, its SES account mirror against a botocore Stubber (moto has
no sesv2 suppression API), and the journal's SUPPRESSED rows."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from emailops import container
from emailops.aws import provision
from emailops.aws.suppression import DynamoSuppressionList, SesAccountSuppression, Suppression
from emailops.core.errors import TransientError
from tests.aws.test_journal import LEASE, NOW, claim, raw

TABLE = "email-suppression"


@pytest.fixture
def store(aws) -> DynamoSuppressionList:
    return container.current().suppression_list


def test_the_table_is_keyed_by_email_as_the_go_service_and_provisioning_is_idempotent(aws):
    described = aws.dynamodb.describe_table(TableName=TABLE)["Table"]
    assert described["KeySchema"] == [{"AttributeName": "Email", "KeyType": "HASH"}]
    assert described["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    lines: list[str] = []
    provision.ensure_suppression_table(aws.dynamodb, TABLE, lines.append)
    assert lines == [f"table {TABLE}: exists"]


def test_add_get_and_reason_are_case_insensitive(store):
    assert store.suppression_reason("Bob@Example.com") is None
    assert store.add(
        "Bob@Example.COM",
        reason="BOUNCE",
        detail="Permanent/General: 550 5.1.1 user unknown",
        source="evt-1",
        now=NOW,
    )
    assert store.get("bob@example.com") == Suppression(
        address="bob@example.com",
        reason="bounce",
        detail="Permanent/General: 550 5.1.1 user unknown",
        source="evt-1",
        created_at=NOW,
    )
    assert store.suppression_reason(" BOB@example.com") == (
        "hard bounce: Permanent/General: 550 5.1.1 user unknown"
    )


def test_a_second_add_refreshes_the_entry_as_the_go_service_does(store):
    assert store.add("a@x.test", reason="COMPLAINT", detail="abuse", source="e1", now=NOW)
    assert not store.add("A@x.test", reason="BOUNCE", detail="later", source="e2", now=NOW + 5)
    assert store.get("a@x.test").reason == "bounce"
    assert store.get("a@x.test").created_at == NOW + 5


def test_unknown_reason_is_refused(store):
    with pytest.raises(ValueError):
        store.add("a@x.test", reason="SPAM", detail="", source="", now=NOW)


def test_remove_returns_what_was_removed(store):
    store.add("a@x.test", reason="MANUAL", detail="asked by support", source="", now=NOW)
    removed = store.remove("A@X.test")
    assert removed is not None and removed.reason == "manual"
    assert store.get("a@x.test") is None
    assert store.remove("a@x.test") is None


def test_search_by_prefix_pages_through_everything(store):
    for i in range(7):
        store.add(f"user{i}@x.test", reason="BOUNCE", detail="", source=f"e{i}", now=NOW + i)
    store.add("other@y.test", reason="BOUNCE", detail="", source="o", now=NOW)
    seen, cursor, pages = [], None, 0
    while True:
        page, cursor = store.search(prefix="USER", cursor=cursor, limit=3)
        pages += 1
        assert len(page) <= 3
        seen += [s.address for s in page]
        if cursor is None:
            break
        assert pages < 10
    assert sorted(seen) == [f"user{i}@x.test" for i in range(7)]
    everything, _ = store.search(limit=50)
    assert len(everything) == 8


def test_a_bad_cursor_is_a_value_error(store):
    with pytest.raises(ValueError):
        store.search(cursor="!!not-a-cursor")


def test_a_missing_table_is_transient(aws):
    missing = DynamoSuppressionList(aws.dynamodb, "no-such-table")
    with pytest.raises(TransientError):
        missing.get("a@x.test")


# --- SES account-level mirror ----------------------------------------------------------------------


@pytest.fixture
def sesv2(aws):
    client = boto3.client("sesv2", region_name="us-east-1")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def test_account_sync_mirrors_additions_and_removals(aws, sesv2):
    client, stubber = sesv2
    store = DynamoSuppressionList(aws.dynamodb, TABLE, account_sync=SesAccountSuppression(client))
    stubber.add_response(
        "put_suppressed_destination", {}, {"EmailAddress": "c@x.test", "Reason": "COMPLAINT"}
    )
    stubber.add_response(
        "put_suppressed_destination", {}, {"EmailAddress": "m@x.test", "Reason": "BOUNCE"}
    )
    stubber.add_response("delete_suppressed_destination", {}, {"EmailAddress": "c@x.test"})
    assert store.add("C@x.test", reason="COMPLAINT", detail="", source="e", now=NOW)
    assert store.add("m@x.test", reason="MANUAL", detail="", source="", now=NOW)
    assert store.remove("c@x.test") is not None


def test_a_failed_mirror_keeps_the_table_change(aws, sesv2, caplog):
    client, stubber = sesv2
    store = DynamoSuppressionList(aws.dynamodb, TABLE, account_sync=SesAccountSuppression(client))
    stubber.add_client_error("put_suppressed_destination", "AccessDeniedException", "nope")
    stubber.add_client_error("delete_suppressed_destination", "NotFoundException", "absent")
    assert store.add("b@x.test", reason="BOUNCE", detail="", source="e", now=NOW)
    assert store.get("b@x.test") is not None
    assert "suppression.account_sync_failed" in caplog.text
    caplog.clear()
    store.remove("b@x.test")  # SES did not have it: not an error
    assert "account_sync_failed" not in caplog.text


def test_wiring_builds_the_mirror_only_when_asked(aws, settings):
    assert container.current().suppression_list.account_sync is None
    settings.SES_ACCOUNT_SUPPRESSION_SYNC = True
    container.reset()
    assert isinstance(container.current().suppression_list.account_sync, SesAccountSuppression)


# --- the journal's SUPPRESSED rows -----------------------------------------------------------------


def test_record_suppressed_writes_a_never_sent_row(aws):
    journal = container.current().journal
    assert journal.record_suppressed(claim(), reason="hard bounce: 550 5.1.1")
    item = raw(aws, "k1")
    assert item["Status"] == {"S": "SUPPRESSED"}
    assert item["Error"] == {"S": "hard bounce: 550 5.1.1"}
    assert item["RecipientKey"] == {"S": "alice@example.com"}
    assert "SesMessageId" not in item and "Attempts" not in item


def test_record_suppressed_never_touches_a_sent_row_or_a_live_claim(aws):
    journal = container.current().journal
    journal.claim(claim())
    assert not journal.record_suppressed(claim(now=NOW + 1), reason="x")
    journal.mark_sent("k1", attempt=1, provider_id="ses-1", sent_at=NOW)
    assert not journal.record_suppressed(claim(now=NOW + LEASE + 5), reason="x")
    assert raw(aws, "k1")["Status"] == {"S": "SENT"}


def test_the_fake_journal_keeps_the_same_rule():
    from tests.fakes import InMemoryJournal

    fake = InMemoryJournal()
    assert fake.record_suppressed(claim(), reason="complaint")
    assert fake.rows["k1"]["Status"] == "SUPPRESSED"
    fake.rows["k1"]["Status"] = "SENT"
    assert not fake.record_suppressed(claim(now=NOW + 1), reason="complaint")


@pytest.mark.parametrize(
    "spelling",
    [
        '"victim"@example.com',
        '"Victim"@Example.com',
        '"vic\\tim"@example.com',
        " VICTIM@example.com",
    ],
)
def test_a_quoted_local_part_hits_the_suppression_of_the_bare_address(store, spelling):
    """The finding: "victim"@example.com (the same mailbox, RFC 5321) got past the suppression of
    victim@example.com."""
    store.add("victim@example.com", reason="COMPLAINT", detail="abuse", source="e", now=NOW)
    assert store.suppression_reason(spelling) == "complaint: abuse"
    assert not store.add(spelling, reason="BOUNCE", detail="", source="e2", now=NOW)
    assert store.remove(spelling).address == "victim@example.com"


def test_a_suppression_added_quoted_is_kept_under_the_bare_address(store):
    store.add('"victim"@example.com', reason="BOUNCE", detail="", source="e", now=NOW)
    assert store.get("victim@example.com").address == "victim@example.com"
    # A quoted part that needs its quotes (a space) is another mailbox.
    assert store.get('"vic tim"@example.com') is None
