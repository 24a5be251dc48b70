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


class PagedQueries:
    """A client whose Query answers one item per page, as DynamoDB does past 1 MB."""

    def __init__(self, items: list[dict]) -> None:
        self.items = items
        self.calls: list[dict] = []

    def query(self, **kwargs):
        self.calls.append(kwargs)
        at = int(kwargs.get("ExclusiveStartKey", {}).get("At", {}).get("N", "0"))
        page = {"Items": self.items[at : at + 1]}
        if at + 1 < len(self.items):
            page["LastEvaluatedKey"] = {"At": {"N": str(at + 1)}}
        return page


def test_read_and_scopes_follow_every_page_of_the_query():
    hours = [
        {"Scope": {"S": "account"}, "Hour": {"S": f"2026-12-01T1{h}"}, "sent": {"N": "1"}}
        for h in range(3)
    ]
    client = PagedQueries(hours)
    stats = DynamoStats(client, "email-stats")

    read = stats.read(scope="account", since_hour="2026-12-01T00", until_hour="2026-12-01T23")

    assert [c.hour for c in read] == ["2026-12-01T10", "2026-12-01T11", "2026-12-01T12"]
    client.items = [{"Scopes": {"SS": ["message#a"]}}, {"Scopes": {"SS": ["org#7", "message#b"]}}]
    client.calls.clear()
    found = stats.scopes(since_hour="2026-12-01T00", until_hour="2026-12-01T23")
    assert found == {"message#a", "message#b", "org#7"}
    assert [c.get("ProjectionExpression") for c in client.calls] == ["Scopes", "Scopes"]


# --- buffered: one ADD per (scope, hour), and a failed write loses nothing -----------------------


class FlakyTable:
    """DynamoStats' per-item write, recorded; ``fail`` makes the next writes raise."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, str, dict]] = []
        self.fail = 0

    def add_scope(self, *, scope, hour, counts, others=()):
        from emailops.core.errors import TransientError

        if self.fail:
            self.fail -= 1
            raise TransientError("add reputation counts", reason="ProvisionedThroughputExceeded")
        self.writes.append((scope, hour, counts))


def test_many_emails_cost_one_add_per_scope_and_hour():
    from emailops.aws.stats import BufferedStats

    table, now = FlakyTable(), [0.0]
    buffered = BufferedStats(table, flush_seconds=2, clock=lambda: now[0])
    for _ in range(50):
        buffered.add(
            message_id="welcome", organization="7", hour="2026-12-01T10", counts={"sent": 1}
        )
    assert table.writes == []  # not due yet
    now[0] = 2.0
    buffered.add(message_id="welcome", organization=None, hour="2026-12-01T10", counts={"sent": 1})
    assert sorted(table.writes) == [
        ("account", "2026-12-01T10", {"sent": 51}),
        ("message#welcome", "2026-12-01T10", {"sent": 51}),
        ("org#7", "2026-12-01T10", {"sent": 50}),
    ]


def test_a_throttled_write_keeps_its_counts_for_the_next_flush():
    from emailops.aws.stats import BufferedStats

    table, errors = FlakyTable(), []
    buffered = BufferedStats(table, flush_seconds=60, on_error=errors.append)
    buffered.add(message_id="welcome", organization=None, hour="2026-12-01T10", counts={"sent": 2})
    table.fail = 1
    buffered.flush()  # the first write is throttled: nothing is lost, nothing written twice
    assert len(errors) == 1 and table.writes == []
    buffered.add(message_id="welcome", organization=None, hour="2026-12-01T10", counts={"sent": 1})
    buffered.flush()
    assert sorted(table.writes) == [
        ("account", "2026-12-01T10", {"sent": 3}),
        ("message#welcome", "2026-12-01T10", {"sent": 3}),
    ]
