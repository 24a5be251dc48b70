"""Beside the Go service, on the moto server with the real consumer process: a suppression row the
Go service wrote (key ``Email`` as the producer wrote it, ``Reason`` bounce, RFC 3339 text) stops
our send. The stack runs as deploy.md says to run beside it: no Redis suppression index
(``SUPPRESSION_INDEX_REDIS_KEY`` empty), so every send reads the shared table, as Go does."""

from __future__ import annotations

import pytest

from tests.e2e.test_consume_e2e import key_for

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def e2e_stack_options() -> dict:
    return {"bucket": "emailops-shared-e2e", "extra_env": {"SUPPRESSION_INDEX_REDIS_KEY": ""}}


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
