"""A suppression the Go service writes (or an operator puts in by hand) stops the very next send,
with the default settings (the Redis index on): a plain ``PutItem`` into ``email-suppression``,
bypassing our writers, then the request through the real queue and ``consume_emails`` (moto
in-process). Issue 35, finding 2: the index said "not suppressed" until its next rebuild."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime

import pytest

from emailops import container
from emailops.core.contract import parse_request
from emailops.core.dedupe import dedupe_key
from emailops.core.ports import Status, TemplateMapping
from worker.wiring import build_consumer


def go_suppresses(settings, address: str, reason: str = "complaint") -> None:
    """The Go bounce handler's write: PutItem, key ``Email`` exactly as SES reported it."""
    container.current().client("dynamodb").put_item(
        TableName=settings.SUPPRESSION_TABLE,
        Item={
            "Email": {"S": address},
            "Reason": {"S": reason},
            "CreatedAt": {"S": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")},
        },
    )


@pytest.fixture
def defaults(aws, settings, redis_key):
    """The index as deployed by default (SUPPRESSION_INDEX_REDIS_KEY set; a key of this test's)."""
    settings.SUPPRESSION_INDEX_REDIS_KEY = f"{redis_key}:suppressed"
    container.reset()
    adapters = container.current()
    adapters.mapping_store.save_mapping(
        TemplateMapping("invite", "invite.html", "Invitation"), expected_version=None
    )
    adapters.template_store.write_template("default/invite.html", "<p>Come</p>")
    return adapters


def body(address: str) -> str:
    return json.dumps({"messageId": "invite", "recipients": [{"email": address}]})


def consume(aws, *addresses: str) -> None:
    for address in addresses:
        aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=body(address))
    build_consumer(adapters=container.current(), concurrency=1).run(
        stop=threading.Event(), until_empty=True, wait_time=0
    )


@pytest.mark.parametrize("address", ["gone@example.com", "Gone.Mixed@Example.com"])
def test_a_row_put_straight_into_the_table_stops_the_next_send_from_the_queue(
    aws, defaults, settings, address
):
    consume(aws, "warm@example.com")  # the steady state: every check has run once
    assert len(aws.sent_emails()) == 1
    go_suppresses(settings, address)
    consume(aws, address)
    assert len(aws.sent_emails()) == 1
    row = defaults.journal_reader.read(dedupe_key(parse_request(body(address)), address))
    assert row.status == Status.SUPPRESSED
