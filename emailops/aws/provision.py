"""Create the service's AWS resources, idempotently (``manage.py bootstrap_aws``).

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
    "ensure_configuration_set",
    "ensure_events_topic",
    "ensure_journal_table",
    "ensure_notifications_subscription",
    "ensure_preferences_table",
    "ensure_queue",
    "ensure_rate_counter_table",
    "ensure_stats_table",
    "ensure_suppression_table",
    "ensure_templates_table",
    "ensure_tombstone_table",
    "ensure_unmatched_events_table",
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


_QUEUE_POLICY_SID = "emailops-ses-events-topic"
# SES v2 publishes every kind; the v1 API (moto's only one) lacks DeliveryDelay and Subscription.
_EVENT_TYPES_V2 = [
    "SEND",
    "REJECT",
    "BOUNCE",
    "COMPLAINT",
    "DELIVERY",
    "OPEN",
    "CLICK",
    "RENDERING_FAILURE",
    "DELIVERY_DELAY",
    "SUBSCRIPTION",
]
_EVENT_TYPES_V1 = [
    "send",
    "reject",
    "bounce",
    "complaint",
    "delivery",
    "open",
    "click",
    "renderingFailure",
]
EVENT_DESTINATION = "emailops-sns"


def ensure_events_topic(sns: Any, sqs: Any, name: str, queue_url: str, report: Report) -> str:
    """The SNS topic SES publishes to, subscribed by the events queue with the SNS envelope (raw
    delivery off, so messages carry a verifiable signature); the queue policy lets only this
    topic send. Returns the topic ARN."""
    try:
        topic_arn = sns.create_topic(Name=name)["TopicArn"]  # idempotent: returns the existing one
        queue_arn = _subscribe_queue(sns, sqs, topic_arn, queue_url, _QUEUE_POLICY_SID)
    except (ClientError, BotoCoreError) as exc:
        raise translate_error(exc, "set up events topic", key=name) from exc
    report(f"topic {name}: {topic_arn}, subscribed by {queue_arn}")
    return topic_arn


def ensure_notifications_subscription(
    sns: Any, sqs: Any, topic_arn: str, queue_url: str, report: Report
) -> None:
    """Subscribe the events queue to a topic that exists already: the Go service's topic of SES
    identity notifications (``notificationType`` Bounce/Complaint/Delivery), which the events
    consumer reads beside event publishing and applies once (the same event ids)."""
    try:
        queue_arn = _subscribe_queue(
            sns, sqs, topic_arn, queue_url, f"{_QUEUE_POLICY_SID}Notifications"
        )
    except (ClientError, BotoCoreError) as exc:
        raise translate_error(exc, "subscribe to the notifications topic", key=topic_arn) from exc
    report(f"topic {topic_arn}: subscribed by {queue_arn} (SES identity notifications)")


def _subscribe_queue(sns: Any, sqs: Any, topic_arn: str, queue_url: str, sid: str) -> str:
    """The queue policy lets ``topic_arn`` send (statement ``sid``), and the queue subscribes with
    the SNS envelope. Returns the queue's ARN."""
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    policy_text = (
        sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["Policy"])
        .get("Attributes", {})  # absent when the queue has no policy
        .get("Policy")
    )
    policy = json.loads(policy_text) if policy_text else {"Version": "2012-10-17"}
    statements = policy.setdefault("Statement", [])
    if not any(s.get("Sid") == sid for s in statements):
        statements.append(
            {
                "Sid": sid,
                "Effect": "Allow",
                "Principal": {"Service": "sns.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
                "Condition": {"ArnEquals": {"aws:SourceArn": topic_arn}},
            }
        )
        sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"Policy": json.dumps(policy)})
    subscribed = sns.list_subscriptions_by_topic(TopicArn=topic_arn).get("Subscriptions", [])
    if not any(s.get("Endpoint") == queue_arn for s in subscribed):
        sns.subscribe(
            TopicArn=topic_arn,
            Protocol="sqs",
            Endpoint=queue_arn,
            Attributes={"RawMessageDelivery": "false"},
        )
    return queue_arn


def ensure_configuration_set(
    ses: Any, sesv2: Any, name: str, topic_arn: str, report: Report
) -> None:
    """The configuration set every email is sent with, and its event destination: the topic.

    Where neither SES API can create the destination (an emulator), it says so and carries on.
    """
    try:
        ses.create_configuration_set(ConfigurationSet={"Name": name})
        report(f"configuration set {name}: created")
    except ClientError as exc:
        if error_code(exc) != "ConfigurationSetAlreadyExists":
            raise translate_error(exc, "create configuration set", key=name) from exc
        report(f"configuration set {name}: exists")
    except BotoCoreError as exc:
        raise translate_error(exc, "create configuration set", key=name) from exc
    try:
        sesv2.create_configuration_set_event_destination(
            ConfigurationSetName=name,
            EventDestinationName=EVENT_DESTINATION,
            EventDestination={
                "Enabled": True,
                "MatchingEventTypes": _EVENT_TYPES_V2,
                "SnsDestination": {"TopicArn": topic_arn},
            },
        )
        report(f"configuration set {name}: every event type published to {topic_arn}")
        return
    except ClientError as exc:
        if error_code(exc) == "AlreadyExistsException":
            report(f"configuration set {name}: event destination {EVENT_DESTINATION} exists")
            return
        v2_problem = _in_one_line(exc)
    except (BotoCoreError, NotImplementedError) as exc:  # moto has no sesv2 event destinations
        v2_problem = _in_one_line(exc)
    try:
        ses.create_configuration_set_event_destination(
            ConfigurationSetName=name,
            EventDestination={
                "Name": EVENT_DESTINATION,
                "Enabled": True,
                "MatchingEventTypes": _EVENT_TYPES_V1,
                "SNSDestination": {"TopicARN": topic_arn},
            },
        )
        report(
            f"configuration set {name}: events published to {topic_arn} through the SES v1 API "
            f"instead (sesv2 refused: {v2_problem}), so without DeliveryDelay/Subscription events"
        )
    except ClientError as exc:
        if error_code(exc) == "EventDestinationAlreadyExists":
            report(f"configuration set {name}: event destination {EVENT_DESTINATION} exists")
            return
        problem = _in_one_line(exc)
        report(
            f"WARNING configuration set {name}: NO event destination (sesv2: {v2_problem}; {problem})"
        )
    except (BotoCoreError, NotImplementedError) as exc:
        problem = _in_one_line(exc)
        report(
            f"WARNING configuration set {name}: NO event destination (sesv2: {v2_problem}; {problem})"
        )


def _in_one_line(exc: BaseException) -> str:
    """An error as one short line for the report. An emulator answers an API it lacks with a whole
    HTML 404 page as the "message": that becomes its HTTP status."""
    if isinstance(exc, ClientError):
        code = error_code(exc) or "error"
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        lines = str(exc.response.get("Error", {}).get("Message", "")).strip().splitlines()
        if not lines or lines[0].lstrip().startswith("<"):
            return f"HTTP {status}, not available here" if code == str(status) else code
        return f"{code}: {lines[0][:200]}"
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:200]}" if lines else type(exc).__name__
