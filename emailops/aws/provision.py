"""Create the service's AWS resources, idempotently (``manage.py bootstrap_aws``): the tables and
the queues here, the SES events' topic and configuration set in ``emailops.aws.provision_events``.

For moto and for a fresh account; against the existing service's resources it only adds what is
missing (e.g. the journal's newer GSIs) and changes nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws.clients import error_code, translate_error

__all__ = [
    "JOURNAL_INDEXES",
    "Report",
    "ensure_journal_table",
    "ensure_preferences_table",
    "ensure_queue",
    "ensure_rate_counter_table",
    "ensure_stats_table",
    "ensure_suppression_table",
    "ensure_templates_table",
    "ensure_tombstone_table",
    "ensure_unmatched_events_table",
    "ensure_webhook_outbox_table",
]

# name → (hash key, range key or None). Case-sensitive recipient search is the Go service's index;
# the other two come with emailops (case-insensitive search, lookup by SES message id).
JOURNAL_INDEXES: dict[str, tuple[str, str | None]] = {
    "RecipientSentAtIndex": ("Recipient", "SentAtKey"),
    "RecipientKeySentAtIndex": ("RecipientKey", "SentAtKey"),
    "SesMessageIdIndex": ("SesMessageId", None),
}

Report = Callable[[str], None]


def _index(name: str, hash_key: str, range_key: str | None) -> dict[str, Any]:
    schema = [{"AttributeName": hash_key, "KeyType": "HASH"}]
    if range_key:
        schema.append({"AttributeName": range_key, "KeyType": "RANGE"})
    return {"IndexName": name, "KeySchema": schema, "Projection": {"ProjectionType": "ALL"}}


def _describe(client: Any, table: str) -> dict[str, Any] | None:
    try:
        return client.describe_table(TableName=table)["Table"]
    except ClientError as exc:
        if error_code(exc) == "ResourceNotFoundException":
            return None
        raise translate_error(exc, "describe table", key=table) from exc


def _ensure_keyed_table(
    client: Any,
    table: str,
    key: str,
    report: Report,
    *,
    range_key: str | None = None,
    ttl_attribute: str | None = None,
    what: str = "set up table",
) -> None:
    """A PAY_PER_REQUEST table keyed by one string attribute (and a string range key, if
    given), optionally with TTL."""
    keys = [(key, "HASH")] + ([(range_key, "RANGE")] if range_key else [])
    try:
        if _describe(client, table):
            report(f"table {table}: exists")
        else:
            client.create_table(
                TableName=table,
                KeySchema=[{"AttributeName": name, "KeyType": kind} for name, kind in keys],
                AttributeDefinitions=[
                    {"AttributeName": name, "AttributeType": "S"} for name, _ in keys
                ],
                BillingMode="PAY_PER_REQUEST",
            )
            client.get_waiter("table_exists").wait(TableName=table)
            report(f"table {table}: created")
        if ttl_attribute:
            _ensure_ttl(client, table, ttl_attribute, report)
    except (ClientError, BotoCoreError) as exc:
        raise translate_error(exc, what, key=table) from exc


def _ensure_ttl(client: Any, table: str, attribute: str, report: Report) -> None:
    ttl = client.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
    if ttl.get("TimeToLiveStatus") not in ("ENABLED", "ENABLING"):
        client.update_time_to_live(
            TableName=table,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": attribute},
        )
        report(f"table {table}: TTL on {attribute} enabled")


def ensure_templates_table(client: Any, table: str, report: Report) -> None:
    _ensure_keyed_table(client, table, "MessageId", report)


def ensure_rate_counter_table(client: Any, table: str, report: Report) -> None:
    """The send guard's counters, shared with the Go consumer (``emailops.aws.rate_counter``):
    ``Bucket``, TTL on ``ExpiresAt``."""
    _ensure_keyed_table(
        client, table, "Bucket", report, ttl_attribute="ExpiresAt", what="set up rate counter table"
    )


def ensure_suppression_table(client: Any, table: str, report: Report) -> None:
    """The suppression list, in the shape shared with the Go service: key ``Email``
    (``emailops.aws.suppression``). A table in our old shape (key ``Address``) is left as it is,
    and one line says how to copy it; the consumer keeps working against it meanwhile."""
    described = _describe(client, table)
    keys = [k["AttributeName"] for k in (described or {}).get("KeySchema", [])]
    if described is not None and keys != ["Email"]:
        report(
            f"table {table}: old key schema ({', '.join(keys)}), not the Go service's (Email): "
            f"run `manage.py migrate_suppression_table --to {table}-v2`, then set "
            f"SUPPRESSION_TABLE={table}-v2"
        )
        return
    _ensure_keyed_table(client, table, "Email", report)


def ensure_tombstone_table(client: Any, table: str, report: Report) -> None:
    """Erasure's tombstones: one item per erased address's keyed hash (``emailops.aws.tombstones``)."""
    _ensure_keyed_table(client, table, "Hash", report)


def ensure_preferences_table(client: Any, table: str, report: Report) -> None:
    """Recipient preferences: key ``Address`` (an ``address_key``), range key ``Category``
    (``emailops.aws.preferences``). emailops's own: the Go service never reads it."""
    _ensure_keyed_table(
        client, table, "Address", report, range_key="Category", what="set up preferences table"
    )


def ensure_webhook_outbox_table(client: Any, table: str, report: Report) -> None:
    """The durable webhook outbox (``emailops.aws.webhook_outbox``): key ``Id``, TTL on
    ``ExpiresAt``, so an event no worker ever takes goes in 7 days."""
    _ensure_keyed_table(
        client, table, "Id", report, ttl_attribute="ExpiresAt", what="set up webhook outbox"
    )


def ensure_journal_table(client: Any, table: str, report: Report) -> None:
    """The journal, its GSIs and TTL on ExpiresAt. GSIs missing on an existing table are added
    one at a time (DynamoDB allows one index creation per UpdateTable)."""
    attributes = {"Id", *(k for keys in JOURNAL_INDEXES.values() for k in keys if k)}
    definitions = [{"AttributeName": a, "AttributeType": "S"} for a in sorted(attributes)]
    try:
        described = _describe(client, table)
        if described is None:
            client.create_table(
                TableName=table,
                KeySchema=[{"AttributeName": "Id", "KeyType": "HASH"}],
                AttributeDefinitions=definitions,
                GlobalSecondaryIndexes=[_index(n, *keys) for n, keys in JOURNAL_INDEXES.items()],
                BillingMode="PAY_PER_REQUEST",
            )
            client.get_waiter("table_exists").wait(TableName=table)
            report(f"table {table}: created with {', '.join(JOURNAL_INDEXES)}")
        else:
            present = {i["IndexName"] for i in described.get("GlobalSecondaryIndexes", [])}
            for name, keys in JOURNAL_INDEXES.items():
                if name in present:
                    continue
                client.update_table(
                    TableName=table,
                    AttributeDefinitions=definitions,
                    GlobalSecondaryIndexUpdates=[{"Create": _index(name, *keys)}],
                )
                client.get_waiter("table_exists").wait(TableName=table)
                report(f"table {table}: added index {name} (it backfills in the background)")
            report(f"table {table}: exists")
        _ensure_ttl(client, table, "ExpiresAt", report)
    except (ClientError, BotoCoreError) as exc:
        raise translate_error(exc, "set up journal table", key=table) from exc


def ensure_queue(
    client: Any,
    name: str,
    report: Report,
    *,
    visibility_timeout: int = 60,
    max_receive_count: int = 3,
) -> str:
    """The request queue with a dead-letter queue ``{name}-dlq``; returns the queue URL.

    An existing queue keeps its attributes; it only gains a dead-letter queue if it has none.
    """
    try:
        try:
            url = client.get_queue_url(QueueName=name)["QueueUrl"]
        except ClientError as exc:
            if "NonExistentQueue" not in error_code(exc):
                raise
            url = None
        if url:
            policy = client.get_queue_attributes(QueueUrl=url, AttributeNames=["RedrivePolicy"])
            if policy.get("Attributes", {}).get("RedrivePolicy"):
                report(f"queue {name}: exists ({url})")
                return url
        dlq_url = client.create_queue(
            QueueName=f"{name}-dlq", Attributes={"MessageRetentionPeriod": "1209600"}
        )["QueueUrl"]
        dlq_arn = client.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        redrive = json.dumps(
            {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(max_receive_count)}
        )
        if url:
            client.set_queue_attributes(QueueUrl=url, Attributes={"RedrivePolicy": redrive})
        else:
            url = client.create_queue(
                QueueName=name,
                Attributes={"VisibilityTimeout": str(visibility_timeout), "RedrivePolicy": redrive},
            )["QueueUrl"]
    except (ClientError, BotoCoreError) as exc:
        raise translate_error(exc, "set up queue", key=name) from exc
    report(
        f"queue {name}: {url} (dead-letter queue {name}-dlq, maxReceiveCount {max_receive_count})"
    )
    return url


def ensure_stats_table(client: Any, table: str, report: Report) -> None:
    """The reputation counters (``emailops.aws.stats``): Scope + Hour, TTL on ExpiresAt."""
    _ensure_keyed_table(
        client,
        table,
        "Scope",
        report,
        range_key="Hour",
        ttl_attribute="ExpiresAt",
        what="set up stats table",
    )


def ensure_unmatched_events_table(client: Any, table: str, report: Report) -> None:
    """Delivery events with no journal row, or of unknown kinds, until TTL on ExpiresAt."""
    _ensure_keyed_table(client, table, "Id", report, ttl_attribute="ExpiresAt")
