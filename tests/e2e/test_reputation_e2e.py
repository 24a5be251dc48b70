"""End to end on the moto server stack: sends to SES's simulator (delivered and bounced), their
events through the events queue → the counters and ``manage.py reputation --json`` show the right
counts and rates; past the act line a bulk request waits (queued, not claimed, not failed) while a
critical one is sent; after ``reputation resume bulk`` the bulk one is sent too."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.e2e.test_consume_e2e import key_for
from tests.support.stack import wait_until

pytestmark = pytest.mark.e2e

SIM = "simulator.amazonses.com"
REDIS_KEY = f"emailops-e2e-reputation:{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def e2e_stack_options() -> dict:
    return {
        "bucket": "emailops-reputation-e2e",
        "events_queue": "email-ses-events",
        "extra_env": {
            "SES_SIMULATE_EVENTS": "true",
            "SES_EVENTS_VERIFY_SIGNATURES": "false",
            "SES_RATE_REDIS_KEY": REDIS_KEY,  # our own guard state in the shared Redis
            "REPUTATION_MIN_VOLUME": "4",  # judge the rates on this test's handful of sends
            # The pause's wait (2 s here) is a fixed value, not a variable: set by these settings.
            "DJANGO_SETTINGS_MODULE": "tests.support.fast_settings",
            "ALERT_WEBHOOK_URL": "",
        },
    }


@pytest.fixture(scope="module")
def stack(e2e_stack, tmp_path_factory):
    """The stack with a migrated console database (pauses are audited) and two more mappings of
    the same template: one bulk, one critical (the Priority attribute on the mapping row)."""
    import redis

    db = tmp_path_factory.mktemp("reputation-db") / "db.sqlite3"
    e2e_stack.env.update(e2e_stack.console_database(db))
    for message_id, priority in (("team-news", "bulk"), ("team-reset", "critical")):
        e2e_stack.dynamodb.put_item(
            TableName="email-message-templates",
            Item={
                "MessageId": {"S": message_id},
                "TemplateFile": {"S": "added-to-team.html"},
                "Subject": {"S": "Team {{.teamName}}"},
                "Priority": {"S": priority},
            },
        )
    yield e2e_stack
    redis.Redis.from_url("redis://127.0.0.1:6379/0").delete(
        f"{REDIS_KEY}:reputation", f"{REDIS_KEY}:slow", REDIS_KEY
    )


def request(email: str, message_id: str = "added-to-team", team: str = "Ops") -> dict:
    return {
        "messageId": message_id,
        "recipients": [{"email": email}],
        "context": {"teamName": team, "administrator": "Dave", "organizationId": 7},
    }


def reputation(stack) -> dict:
    return json.loads(stack.manage("reputation", "--json").stdout)


def stats_item(stack, scope: str) -> dict[str, int]:
    items = stack.dynamodb.query(
        TableName="email-stats",
        KeyConditionExpression="#s = :s",
        ExpressionAttributeNames={"#s": "Scope"},
        ExpressionAttributeValues={":s": {"S": scope}},
    )["Items"]
    totals: dict[str, int] = {}
    for item in items:
        for name, value in item.items():
            # rate_waits depends on timing (sends that waited for the shared rate): not compared
            if "N" in value and name not in ("ExpiresAt", "rate_waits"):
                totals[name] = totals.get(name, 0) + int(value["N"])
    return totals


def test_counts_rates_and_the_guard_end_to_end(stack):
    sends = [request(f"success+{i}@{SIM}") for i in range(3)] + [request(f"bounce@{SIM}")]
    stack.enqueue(sends)
    stack.consume()
    stack.consume()  # a redelivery of nothing new: the counts must not move
    stack.consume("consume_ses_events")

    expected = {"sent": 4, "delivered": 3, "bounced_permanent": 1}
    assert stats_item(stack, "account") == expected
    assert stats_item(stack, "message#added-to-team") == expected
    assert stats_item(stack, "org#7") == expected
    figures = reputation(stack)
    assert figures["account"] == {
        "sent": 4,
        "delivered": 3,
        "bounced": 1,
        "complained": 0,
        "bounce_rate": 0.25,
        "complaint_rate": 0.0,
        "state": "act",
    }
    assert figures["message_ids"]["added-to-team"]["bounce_rate"] == 0.25
    assert figures["organizations"]["7"]["state"] == "act"
    assert figures["paused"] == []

    out = stack.manage("reputation", "evaluate").stdout
    assert "acting on: 7, account" in out or "acting on: account, 7" in out
    paused = reputation(stack)["paused"]
    assert {(p["priority"], p["organization"]) for p in paused} == {("bulk", None), ("bulk", "7")}

    bulk, critical = (
        request(f"success+bulk@{SIM}", "team-news"),
        request(f"success+critical@{SIM}", "team-reset"),
    )
    stack.enqueue([bulk, critical])
    stack.consume()
    assert len(stack.sent_to(f"success+critical@{SIM}")) == 1
    assert stack.sent_to(f"success+bulk@{SIM}") == []
    assert stack.depth() == 1  # the bulk request waits on the queue
    assert stack.journal_statuses().get(key_for(bulk, f"success+bulk@{SIM}")) is None  # unclaimed

    stack.manage("reputation", "resume", "bulk", "--reason", "list cleaned")
    stack.manage("reputation", "resume", "bulk", "--organization", "7", "--reason", "cleaned")
    stack.manage("reputation", "evaluate")  # still past the line: a person's lift holds
    assert reputation(stack)["paused"] == []

    def visible() -> bool:  # after the pause's wait (2 s) the waiting record is back
        attributes = stack.sqs.get_queue_attributes(
            QueueUrl=stack.direct(stack.queue_url), AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"]) > 0

    assert wait_until(visible, timeout=30)
    stack.consume()
    assert len(stack.sent_to(f"success+bulk@{SIM}")) == 1
    statuses = stack.journal_statuses()
    assert "FAILED" not in statuses.values()
    assert stack.depth(stack.dlq_url) == 0 and stack.depth() == 0
    assert stats_item(stack, "account")["sent"] == 6
