"""Malformed or oversized attributes from producers: every request carries SQS's full ten message
attributes (binary ones too), some a mangled ``EmailOpsState``, two are as large as the queue takes,
and SES refuses every send for the first seconds, so each record is copied for a retry at least once.

Afterwards every good recipient has exactly one send; requests that can never be sent sit in the
dead-letter queue with all ten producer attributes and a reason; a request too large to carry its
retry state is either sent once or dead-lettered with a reason, never retried blind.
"""

from __future__ import annotations

import json
import time

import pytest

from emailops.aws.sqs import OVERFLOW_ATTRIBUTE, producer_attributes
from tests.faults.conftest import knob
from tests.faults.ledger import Ledger
from tests.faults.workload import FAST_RETRIES, VISIBILITY_SECONDS, expected_keys, requests
from tests.support.aws_proxy import ses_5xx
from tests.support.stack import Stack

pytestmark = pytest.mark.faults

MAX_MESSAGE_BYTES = 262_144
# Mangled states a producer (or an old consumer) may leave; each must count as a fresh record.
MANGLED_STATES = ["not json", '{"attempts": "many"}', "[]", '{"accepted": 5}', "{" * 3000]


def producer_set(i: int, *, state: str | None) -> dict:
    """Ten attributes: nine of the producer's (one binary, one of 4 KB) plus a mangled state, or
    ten of the producer's."""
    attributes = {f"P{j}": {"DataType": "String", "StringValue": f"{i}-{j}"} for j in range(8)}
    attributes["Blob"] = {"DataType": "Binary", "BinaryValue": bytes([i % 256, 0, 255]) * 10}
    if state is None:
        attributes["Large"] = {"DataType": "String", "StringValue": "L" * 4096}
    else:
        attributes["EmailOpsState"] = {"DataType": "String", "StringValue": state}
    return attributes


def kept_producer_names(message: dict) -> set[str]:
    from emailops.aws.sqs import QueueMessage

    received = QueueMessage("", "", message["Body"], attributes=message["MessageAttributes"])
    return set(producer_attributes(received.attributes, drop=("EmailOpsState", "FailureReason")))


def test_producer_attributes_survive_retries_and_dead_letters(moto_server, proxy):
    refusing = knob("FAULTS_ATTRIBUTES_SES_DOWN_SECONDS", 15)
    stack = Stack(
        moto_server,
        endpoint=proxy.url,
        queue="attrs-queue",
        journal_table="attrs-journal",
        bucket="attrs-templates",
        visibility_timeout=VISIBILITY_SECONDS,
        extra_env=FAST_RETRIES,
    )
    queue = stack.direct(stack.queue_url)
    stack.sqs.set_queue_attributes(
        QueueUrl=queue, Attributes={"MaximumMessageSize": str(MAX_MESSAGE_BYTES)}
    )
    good = requests("attrs", knob("FAULTS_ATTRIBUTES_REQUESTS", 24), several_every=4, several=2)
    expected = expected_keys(good)
    unknown = [
        {"messageId": "no-such-message", "recipients": [{"email": f"nobody{i}@example.com"}]}
        for i in range(3)
    ]
    oversized = []
    for i in range(2):
        body = {
            "messageId": "added-to-team",
            "recipients": [{"email": f"big{i}@example.com"}],
            "context": {"teamName": "Big", "administrator": "Ada", "notes": ""},
        }
        room = MAX_MESSAGE_BYTES - len(json.dumps(body)) - 300  # fits, but not with a state
        body["context"]["notes"] = "n" * room
        oversized.append(body)

    def enqueue(bodies: list[dict], *, mangle: bool) -> None:
        for i, body in enumerate(bodies):
            state = MANGLED_STATES[i % len(MANGLED_STATES)] if mangle and i % 2 else None
            attributes = (
                producer_set(i, state=state)
                if len(json.dumps(body)) < 10_000
                else {f"P{j}": {"DataType": "String", "StringValue": str(j)} for j in range(10)}
            )
            stack.sqs.send_message(
                QueueUrl=queue, MessageBody=json.dumps(body), MessageAttributes=attributes
            )

    args = stack.consumer_args(concurrency=4, wait_time=1)
    try:
        proxy.reset_records()
        proxy.add(ses_5xx().during(refusing))
        enqueue(oversized, mangle=False)  # first: received while SES still refuses
        enqueue(good, mangle=True)
        enqueue(unknown, mangle=False)
        for slot in range(2):
            stack.start_consumer(f"attrs{slot}", args)
        started = time.monotonic()
        while time.monotonic() < started + refusing + 60:
            if time.monotonic() > started + refusing and stack.depth() == 0:
                break
            time.sleep(0.5)
        left_on_queue = stack.depth()
    finally:
        stack.close()
        proxy.clear()

    sends = proxy.ses_sends()
    big = {f"big{i}@example.com" for i in range(2)}
    ledger = Ledger(expected, [s for s in sends if not big & set(s.recipients)], [], kills={})
    dead = stack.dead_letters()
    reasons = {
        json.loads(m["Body"])["recipients"][0]["email"]: m["MessageAttributes"]
        .get("FailureReason", {})
        .get("StringValue", "")
        for m in dead
    }
    big_sends = {address: sum(address in s.recipients for s in sends) for address in big}
    overflowed = sum(OVERFLOW_ATTRIBUTE in m["MessageAttributes"] for m in dead)
    print(
        f"\n--- producer attributes: ten each, {len(MANGLED_STATES)} mangled states, SES down "
        f"{refusing} s\n{ledger.report()}\n"
        f"dead-lettered         {len(dead)} ({overflowed} with overflowed producer attributes)\n"
        f"oversized             sends {big_sends}, dead-lettered "
        f"{sorted(a for a in reasons if a in big)}\n"
        f"left on the queue     {left_on_queue}"
    )
    assert left_on_queue == 0
    assert ledger.lost == [] and ledger.duplicates == 0, ledger.causes
    for i in range(3):
        address = f"nobody{i}@example.com"
        assert "no such messageId" in reasons[address]
    for message in dead:
        names = kept_producer_names(message)
        if "nobody" in message["Body"]:
            assert names == {f"P{j}" for j in range(8)} | {"Blob", "Large"}
    for address in big:  # each ends one way, never silently
        if address in reasons:
            assert big_sends[address] == 0 and "cannot be retried" in reasons[address]
        else:
            assert big_sends[address] == 1
