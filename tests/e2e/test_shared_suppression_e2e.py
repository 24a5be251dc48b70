"""Beside the Go service, on the moto server with the real consumer process: a suppression row the
Go service wrote (key ``Email`` as the producer wrote it, ``Reason`` bounce, RFC 3339 text) stops
our send. The stack runs with the default settings (``SUPPRESSION_INDEX_REDIS_KEY`` set, the
erasure tombstones' index on): every send reads the shared table, as Go does."""

from __future__ import annotations

import pytest

from tests.e2e.test_consume_e2e import key_for

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def e2e_stack_options() -> dict:
    return {"bucket": "emailops-shared-e2e"}


def request(email: str) -> dict:
    return {
        "messageId": "added-to-team",
        "recipients": [{"email": email}, {"email": "free@example.com"}],
        "context": {"teamName": "Go", "administrator": "Dave"},
    }


def test_a_go_written_suppression_stops_the_consumer(e2e_stack):
    address = "Go.Bounced@Example.com"
    e2e_stack.dynamodb.put_item(
        TableName="email-suppression",
        Item={
            "Email": {"S": address},
            "Reason": {"S": "bounce"},
            "CreatedAt": {"S": "2026-12-01T10:00:00Z"},
        },
    )
    body = request(address)
    e2e_stack.enqueue([body])
    e2e_stack.consume()
    row = e2e_stack.row(key_for(body, address))
    assert row["Status"] == "SUPPRESSED" and "hard bounce" in row["Error"]
    assert e2e_stack.sent_to(address) == []
    assert e2e_stack.row(key_for(body, "free@example.com"))["Status"] == "SENT"


OLD = "email-suppression-old"


def test_on_a_table_in_our_old_shape_mail_flows_and_the_migration_keeps_every_entry(e2e_stack):
    """Until an operator migrates, the consumer keeps working against the old key schema
    (``Address``, lowercased); bootstrap_aws names the command; the copy keeps every entry."""
    e2e_stack.dynamodb.create_table(
        TableName=OLD,
        KeySchema=[{"AttributeName": "Address", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "Address", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for n, reason in enumerate(("BOUNCE", "COMPLAINT", "MANUAL")):
        e2e_stack.dynamodb.put_item(
            TableName=OLD,
            Item={
                "Address": {"S": f"old{n}@example.com"},
                "Reason": {"S": reason},
                "CreatedAt": {"N": str(1_764_000_000 + n)},
            },
        )
    env = {"SUPPRESSION_TABLE": OLD}
    body = request("Old0@Example.com")
    e2e_stack.enqueue([body])
    e2e_stack.consume(env=env)
    assert e2e_stack.row(key_for(body, "Old0@Example.com"))["Status"] == "SUPPRESSED"
    assert e2e_stack.row(key_for(body, "free@example.com"))["Status"] == "SENT"

    out = e2e_stack.manage("bootstrap_aws", env=env).stdout
    said = [line for line in out.splitlines() if OLD in line]
    assert len(said) == 1 and f"migrate_suppression_table --to {OLD}-v2" in said[0]

    out = e2e_stack.manage("migrate_suppression_table", "--to", f"{OLD}-v2", env=env).stdout
    assert "3 read, 3 copied, 0 already there" in out
    for n, reason in enumerate(("bounce", "complaint", "manual")):
        item = e2e_stack.item(f"{OLD}-v2", {"Email": f"old{n}@example.com"})
        assert item["Reason"] == reason and item["CreatedAt"].endswith("Z")
    again = request("OLD2@example.com")
    e2e_stack.enqueue([again])
    e2e_stack.consume(env={"SUPPRESSION_TABLE": f"{OLD}-v2"})
    assert e2e_stack.row(key_for(again, "OLD2@example.com"))["Status"] == "SUPPRESSED"
    assert e2e_stack.sent_to("OLD2@example.com") == []
