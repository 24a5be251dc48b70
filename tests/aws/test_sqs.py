"""SqsQueue against moto: describe, receive, delete, visibility, and dead-lettering with a reason."""

from __future__ import annotations

import json

import pytest

from emailops import container
from emailops.aws.sqs import FAILURE_REASON_ATTRIBUTE, SqsQueue
from emailops.core.errors import EmailOpsError


@pytest.fixture
def queue(aws) -> SqsQueue:
    return container.current().queue


def send(aws, body: str, **attributes: str) -> str:
    return aws.sqs.send_message(
        QueueUrl=aws.queue_url,
        MessageBody=body,
        MessageAttributes={
            k: {"DataType": "String", "StringValue": v} for k, v in attributes.items()
        },
    )["MessageId"]


def count(aws, url: str) -> int:
    attrs = aws.sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attrs["ApproximateNumberOfMessages"]) + int(
        attrs["ApproximateNumberOfMessagesNotVisible"]
    )


def test_describe(aws, queue):
    info = queue.describe()
    assert info.visibility_timeout == 30
    assert info.dead_letter_url == aws.dlq_url
    assert info.max_receive_count == 3


def test_describe_a_queue_without_redrive_policy(aws):
    url = aws.sqs.create_queue(QueueName="plain", Attributes={"VisibilityTimeout": "45"})[
        "QueueUrl"
    ]
    info = SqsQueue(aws.sqs, url).describe()
    assert (info.visibility_timeout, info.dead_letter_url, info.max_receive_count) == (
        45,
        None,
        None,
    )


def test_receive(aws, queue):
    message_id = send(aws, '{"messageId":"m"}', Origin="tests")
    [message] = queue.receive(max_messages=10, wait_seconds=0)
    assert message.message_id == message_id
    assert message.body == '{"messageId":"m"}'
    assert message.receive_count == 1
    assert message.receipt_handle
    assert message.attributes["Origin"]["StringValue"] == "tests"
    assert queue.receive(wait_seconds=0) == []  # in flight now


def test_receive_count_grows_with_each_delivery(aws, queue):
    send(aws, "x")
    first = queue.receive(wait_seconds=0)[0]
    queue.change_visibility(first, 0)
    second = queue.receive(wait_seconds=0)[0]
    assert (first.receive_count, second.receive_count) == (1, 2)
    assert second.message_id == first.message_id


def test_send(aws, queue):
    message_id = queue.send('{"messageId":"m"}')
    [message] = queue.receive(wait_seconds=0)
    assert (message.message_id, message.body) == (message_id, '{"messageId":"m"}')


def test_delete_batch_in_chunks_of_ten(aws, queue):
    for i in range(12):
        send(aws, f"m{i}")
    received = []
    while batch := queue.receive(max_messages=10, wait_seconds=0):
        received += batch
    assert len(received) == 12
    assert queue.delete_batch(received) == []
    assert count(aws, aws.queue_url) == 0


def test_delete_batch_of_nothing(queue):
    assert queue.delete_batch([]) == []


def test_change_visibility_hides_and_releases(aws, queue):
    send(aws, "x")
    [message] = queue.receive(wait_seconds=0)
    queue.change_visibility(message, 0)
    [again] = queue.receive(wait_seconds=0)
    queue.change_visibility(again, 600)
    assert queue.receive(wait_seconds=0) == []


@pytest.mark.parametrize(("asked", "sent"), [(-5, 0), (10**9, 43_200)])
def test_change_visibility_is_clamped_to_what_sqs_accepts(aws, queue, asked, sent):
    calls = []

    def spy(**kwargs):  # (moto, like SQS, also counts the time the message was already hidden)
        calls.append(kwargs["VisibilityTimeout"])

    send(aws, "x")
    [message] = queue.receive(wait_seconds=0)
    queue.client = type("Spy", (), {"change_message_visibility": staticmethod(spy)})()
    queue.change_visibility(message, asked)
    assert calls == [sent]


def test_dead_letter_moves_the_message_with_its_reason(aws, queue):
    send(aws, '{"messageId":"m"}', Origin="tests", Trace="t-1")
    [message] = queue.receive(wait_seconds=0)
    queue.dead_letter(message, aws.dlq_url, "parse request: body is not JSON")
    [dead] = aws.queue_messages(aws.dlq_url)
    assert dead["Body"] == '{"messageId":"m"}'
    attrs = dead["MessageAttributes"]
    assert attrs[FAILURE_REASON_ATTRIBUTE] == {
        "DataType": "String",
        "StringValue": "parse request: body is not JSON",
    }
    assert attrs["Origin"]["StringValue"] == "tests"
    assert attrs["Trace"]["StringValue"] == "t-1"
    assert count(aws, aws.queue_url) == 0  # and it left the source queue


def test_dead_letter_replaces_an_old_reason_and_respects_limits(aws, queue):
    attributes = {f"A{i}": str(i) for i in range(10)}
    attributes[FAILURE_REASON_ATTRIBUTE] = "old reason"
    # SQS takes at most 10 attributes per message; build the received message by hand.
    from emailops.aws.sqs import QueueMessage

    send(aws, "body")
    [received] = queue.receive(wait_seconds=0)
    message = QueueMessage(
        message_id=received.message_id,
        receipt_handle=received.receipt_handle,
        body="body",
        attributes={
            k: {"DataType": "String", "StringValue": v, "StringListValues": []}
            for k, v in attributes.items()
        },
    )
    queue.dead_letter(message, aws.dlq_url, "x" * 5000)
    [dead] = aws.queue_messages(aws.dlq_url)
    attrs = dead["MessageAttributes"]
    assert len(attrs) <= 10
    assert attrs[FAILURE_REASON_ATTRIBUTE]["StringValue"] == "x" * 4000
    assert count(aws, aws.queue_url) == 0


def test_errors_are_the_cores(aws):
    gone = SqsQueue(aws.sqs, aws.queue_url + "-gone")
    with pytest.raises(EmailOpsError) as info:
        gone.receive(wait_seconds=0)
    assert "receive messages" in str(info.value)
    with pytest.raises(EmailOpsError):
        gone.describe()


def test_redrive_policy_is_what_provision_wrote(aws):
    policy = json.loads(
        aws.sqs.get_queue_attributes(QueueUrl=aws.queue_url, AttributeNames=["RedrivePolicy"])[
            "Attributes"
        ]["RedrivePolicy"]
    )
    assert policy["deadLetterTargetArn"].endswith(":email-service-queue-dlq")


# --- producers' attributes: all ten travel with every copy -----------------------------------


def ten_producer_attributes(aws) -> dict:
    attributes = {f"P{i}": {"DataType": "String", "StringValue": f"v{i}"} for i in range(9)}
    attributes["Blob"] = {"DataType": "Binary", "BinaryValue": b"\x00\xffbinary"}
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody="body", MessageAttributes=attributes)
    return attributes


def producers(message) -> dict:
    from emailops.aws.sqs import producer_attributes

    found = producer_attributes(message.attributes, drop=("EmailOpsState", "FailureReason"))
    return {k: v.get("StringValue", v.get("BinaryValue")) for k, v in found.items()}


def test_a_retry_keeps_all_ten_producer_attributes_beside_its_state(aws, queue):
    ten_producer_attributes(aws)
    expected = {f"P{i}": f"v{i}" for i in range(9)} | {"Blob": b"\x00\xffbinary"}
    [message] = queue.receive(wait_seconds=0)
    for attempt in range(1, 4):  # copies of copies do not nest or lose anything
        queue.requeue(message, delay_seconds=0, carried={"EmailOpsState": f"s{attempt}"})
        [message] = queue.receive(wait_seconds=0)
        assert len(message.attributes) == 10
        assert message.string_attribute("EmailOpsState") == f"s{attempt}"
        assert producers(message) == expected


def test_a_dead_letter_move_keeps_every_producer_attribute_with_state_and_reason(aws, queue):
    ten_producer_attributes(aws)
    [message] = queue.receive(wait_seconds=0)
    queue.dead_letter(message, aws.dlq_url, "gave up", carried={"EmailOpsState": "{}"})
    [dead] = SqsQueue(aws.sqs, aws.dlq_url).receive(wait_seconds=0)
    assert dead.string_attribute(FAILURE_REASON_ATTRIBUTE) == "gave up"
    assert dead.string_attribute("EmailOpsState") == "{}"
    assert producers(dead) == {f"P{i}": f"v{i}" for i in range(9)} | {"Blob": b"\x00\xffbinary"}


def test_a_copy_too_large_for_the_queue_is_refused_as_permanent_before_sqs_sees_it(aws):
    small = SqsQueue(aws.sqs, aws.queue_url, max_message_bytes=1000)
    send(aws, "x" * 960)
    [message] = small.receive(wait_seconds=0)
    with pytest.raises(EmailOpsError) as caught:
        small.requeue(message, delay_seconds=0, carried={"EmailOpsState": "{}" * 20})
    assert caught.value.permanent and "MaximumMessageSize of 1000" in caught.value.describe()
    small.dead_letter(message, aws.dlq_url, "too big", carried={"EmailOpsState": "{}" * 20})
    [dead] = aws.queue_messages(aws.dlq_url)  # the reason still goes; the state could not
    assert dead["MessageAttributes"][FAILURE_REASON_ATTRIBUTE]["StringValue"] == "too big"


def test_a_dead_letter_copy_with_no_room_for_a_reason_still_moves(aws):
    tight = SqsQueue(aws.sqs, aws.queue_url, max_message_bytes=1000)
    attributes = {f"P{i}": {"DataType": "String", "StringValue": "v"} for i in range(10)}
    body = "x" * (1000 - 10 * (2 + 6 + 1))  # exactly full with the producer's ten attributes
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody=body, MessageAttributes=attributes)
    [message] = tight.receive(wait_seconds=0)
    tight.dead_letter(message, aws.dlq_url, "gave up", carried={"EmailOpsState": "{}"})
    [dead] = aws.queue_messages(aws.dlq_url)
    assert set(dead["MessageAttributes"]) == set(attributes)
    assert aws.queue_messages(aws.queue_url) == []
