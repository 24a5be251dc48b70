"""Journal rows for the journal tests and benchmark: written straight to the table, or made by
running real requests through the consumer."""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

from boto3.dynamodb.types import TypeSerializer

from emailops.aws.journal import rfc3339, sent_at_key, to_dynamo
from emailops.core.contract import address_key

_serializer = TypeSerializer()
BASE_TIME = 1_780_000_000  # 2026-05-28


def journal_row(
    recipient: str,
    *,
    at: int,
    message_id: str = "added-to-team",
    status: str = "SENT",
    go_row: bool = False,
    key: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A row as the consumer writes it; ``go_row``: as the Go consumer did (no RecipientKey,
    ClaimExpiresAt, Subject or TemplateKey)."""
    key = key or hashlib.sha256(f"{recipient}|{message_id}|{at}".encode()).hexdigest()
    row: dict[str, Any] = {
        "Id": key,
        "MessageId": message_id,
        "Recipient": recipient,
        "Status": status,
        "Timestamp": at,
        "SentAtKey": sent_at_key(at),
        "Context": {"teamName": "Curators", "organizationNodeId": "N:organization:1"},
        "ExpiresAt": at + 90 * 86400,
    }
    if status == "SENT":
        row |= {"SesMessageId": f"ses-{key[:12]}", "MessageSent": rfc3339(at + 1)}
    if not go_row:
        row |= {
            "RecipientKey": address_key(recipient),
            "ClaimExpiresAt": at + 30,
            "Attempts": 1,
            "Subject": "You were added to the team Curators",
            "TemplateKey": "default/added-to-team.html",
        }
    return row | extra


def queue_visibility(aws: Any, seconds: int | None = None) -> int:
    """The request queue's visibility timeout, as SQS holds it (set to ``seconds`` first when
    given): the claim lease while CLAIM_LEASE_SECONDS is 0."""
    if seconds is not None:
        aws.sqs.set_queue_attributes(
            QueueUrl=aws.queue_url, Attributes={"VisibilityTimeout": str(seconds)}
        )
    attributes = aws.sqs.get_queue_attributes(
        QueueUrl=aws.queue_url, AttributeNames=["VisibilityTimeout"]
    )["Attributes"]
    return int(attributes["VisibilityTimeout"])


def put_rows(client: Any, table: str, rows: list[dict[str, Any]]) -> None:
    """BatchWriteItem in chunks of 25, retrying what DynamoDB leaves unprocessed."""
    for start in range(0, len(rows), 25):
        requests = [
            {"PutRequest": {"Item": {k: _serializer.serialize(to_dynamo(v)) for k, v in r.items()}}}
            for r in rows[start : start + 25]
        ]
        pending = {table: requests}
        while pending:
            pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}


def send_through_pipeline(aws: Any, *requests: dict[str, Any]) -> None:
    """Enqueue EmailRequests and run the real consumer until the queue is empty."""
    from emailops import container
    from worker.wiring import build_consumer

    for request in requests:
        aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=json.dumps(request))
    # One at a time: tests read the rows in the order they were sent.
    build_consumer(adapters=container.current(), concurrency=1).run(
        stop=threading.Event(), until_empty=True, wait_time=0
    )
