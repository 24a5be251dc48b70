"""The reputation counters in DynamoDB (moto): ADD per scope and hour, one Query per scope, TTL."""

from __future__ import annotations

from emailops.aws import provision
from emailops.aws.stats import DynamoStats
from emailops.core.reputation import HourCounts


def test_bootstrap_creates_the_table_with_ttl_on_expires_at(aws):
    provision.ensure_stats_table(aws.dynamodb, "email-stats-2", lambda _line: None)
    ttl = aws.dynamodb.describe_time_to_live(TableName="email-stats-2")["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "ExpiresAt" and ttl["TimeToLiveStatus"] == "ENABLED"


def test_add_counts_every_scope_and_read_queries_a_range(aws):
    stats = DynamoStats(aws.dynamodb, "email-stats", ttl_days=400)
    stats.add(message_id="welcome", organization="7", hour="2026-12-01T10", counts={"sent": 1})
    stats.add(
        message_id="welcome",
        organization=None,
        hour="2026-12-01T10",
        counts={"sent": 1, "delivered": 2, "failed": 0},
    )
    stats.add(message_id="reset", organization=None, hour="2026-12-01T12", counts={"sent": 1})
    assert stats.read(scope="account", since_hour="2026-12-01T00", until_hour="2026-12-01T23") == [
        HourCounts("account", "2026-12-01T10", {"sent": 2, "delivered": 2}),
        HourCounts("account", "2026-12-01T12", {"sent": 1}),
    ]
    assert stats.read(scope="org#7", since_hour="2026-12-01T00", until_hour="2026-12-01T23") == [
        HourCounts("org#7", "2026-12-01T10", {"sent": 1})
    ]
    assert stats.read(scope="account", since_hour="2026-12-01T11", until_hour="2026-12-01T23") == [
        HourCounts("account", "2026-12-01T12", {"sent": 1})
    ]
    assert stats.scopes(since_hour="2026-12-01T00", until_hour="2026-12-01T23") == {
        "message#welcome",
        "message#reset",
        "org#7",
    }
    item = aws.dynamodb.get_item(
        TableName="email-stats", Key={"Scope": {"S": "account"}, "Hour": {"S": "2026-12-01T10"}}
    )["Item"]
    assert int(item["ExpiresAt"]["N"]) == 1_796_119_200 + 400 * 86400  # the hour + 400 days
