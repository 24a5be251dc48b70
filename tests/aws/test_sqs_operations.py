"""SqsQueue's whole-queue operations (the dead-letter page, redrive, depth alert) against moto."""

from __future__ import annotations

from emailops import container
from emailops.aws.sqs import SqsQueue, forwardable_attributes


def test_depth_hidden_receive_release_and_copy(aws):
    dlq = SqsQueue(aws.sqs, aws.dlq_url)
    for n in range(3):
        aws.sqs.send_message(
            QueueUrl=aws.dlq_url,
            MessageBody=f"m{n}",
            MessageAttributes={
                "FailureReason": {"DataType": "String", "StringValue": "why"},
                "Blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
            },
        )
    assert dlq.depth().total == 3 and dlq.depth().visible == 3
    held = dlq.receive_hidden(max_messages=10, hide_seconds=60)
    assert len(held) == 3 and all(m.sent_at > 1_700_000_000 for m in held)
    assert (dlq.depth().visible, dlq.depth().in_flight) == (0, 3)
    assert dlq.receive_hidden(max_messages=10) == []  # hidden while held
    assert dlq.release(held) == []
    assert dlq.depth().visible == 3

    source = container.current().queue
    attributes = forwardable_attributes(held[0].attributes)
    assert set(attributes) == {"Blob"}
    assert attributes["Blob"] == {"DataType": "Binary", "BinaryValue": b"\x00\x01"}
    new_id = source.send_with_attributes(held[0].body, attributes)
    (copy,) = aws.queue_messages(aws.queue_url)
    assert copy["MessageId"] == new_id and copy["MessageAttributes"]["Blob"]["BinaryValue"]
    [again] = [m for m in dlq.receive_hidden(max_messages=10) if m.body == "m0"]
    dlq.delete(again)
    assert dlq.depth().total == 2
