"""Send controls on the moto server with the real consumer process: ``SEND_ENABLED=false``, a
mapping's ``SendDisabled`` (the Go branch's attribute, so the Go service obeys it too) and the
console's emergency stop (one field in Redis that every consumer re-reads) each journal the request
log-only, as Go journals it (``SENT`` + ``LoggedOnly``, no SES id), with the reason, and call SES
zero times."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.e2e.test_consume_e2e import key_for

pytestmark = pytest.mark.e2e

REDIS_KEY = f"emailops-e2e-controls:{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def e2e_stack_options() -> dict:
    return {"bucket": "emailops-controls-e2e", "extra_env": {"SES_RATE_REDIS_KEY": REDIS_KEY}}


@pytest.fixture(scope="module")
def redis_client():
    import redis

    client = redis.Redis.from_url("redis://127.0.0.1:6379/0", decode_responses=True)
    yield client
    client.delete(f"{REDIS_KEY}:reputation", REDIS_KEY)


def request(address: str, message_id: str = "added-to-team") -> dict:
    return {
        "messageId": message_id,
        "recipients": [{"email": address}],
        "context": {"teamName": "Controls", "administrator": "Dave"},
    }


def consumed_log_only(e2e_stack, body: dict, env: dict[str, str] | None = None) -> dict:
    """Consume ``body``; its row must be log-only and SES not called for it."""
    address = body["recipients"][0]["email"]
    e2e_stack.enqueue([body])
    e2e_stack.consume(env=env)
    row = e2e_stack.row(key_for(body, address))
    assert (row["Status"], row.get("LoggedOnly")) == ("SENT", True)
    assert "SesMessageId" not in row
    assert e2e_stack.sent_to(address) == []
    return row


def test_send_enabled_false_journals_log_only_and_sends_nothing(e2e_stack):
    row = consumed_log_only(
        e2e_stack, request("service-off@example.com"), env={"SEND_ENABLED": "false"}
    )
    assert row["LoggedOnlyReason"] == "service-stop"
    assert "SEND_ENABLED" in row["LoggedOnlyDetail"]


def test_a_mapping_with_send_disabled_journals_log_only(e2e_stack):
    mapping = e2e_stack.dynamodb.get_item(
        TableName="email-message-templates", Key={"MessageId": {"S": "added-to-team"}}
    )["Item"]
    e2e_stack.dynamodb.put_item(
        TableName="email-message-templates",
        Item={**mapping, "MessageId": {"S": "team-paused"}, "SendDisabled": {"BOOL": True}},
    )
    row = consumed_log_only(e2e_stack, request("template-off@example.com", "team-paused"))
    assert row["LoggedOnlyReason"] == "template-off"
    # The other templates still send.
    body = request("template-on@example.com")
    e2e_stack.enqueue([body])
    e2e_stack.consume()
    assert len(e2e_stack.sent_to("template-on@example.com")) == 1


def test_the_emergency_stop_journals_log_only_until_it_is_lifted(e2e_stack, redis_client):
    stop = {"reason": "runaway producer", "by": "ops-lead", "since": "2026-12-02T10:00:00Z"}
    redis_client.hset(f"{REDIS_KEY}:reputation", "send-stop", json.dumps(stop))
    row = consumed_log_only(e2e_stack, request("stopped@example.com"))
    assert row["LoggedOnlyReason"] == "service-stop"
    assert "runaway producer" in row["LoggedOnlyDetail"]

    redis_client.hdel(f"{REDIS_KEY}:reputation", "send-stop")
    body = request("after-stop@example.com")
    e2e_stack.enqueue([body])
    e2e_stack.consume()
    assert e2e_stack.row(key_for(body, "after-stop@example.com")).get("SesMessageId")
