"""EmailClient against moto's in-process SQS: what lands on the queue is what the consumer parses."""

from __future__ import annotations

import json

import pytest

from emailops.client import EmailClient, To, messages
from emailops.core.contract import parse_request
from tests.conftest import fixture_body


@pytest.fixture
def sqs(aws_env):
    import boto3
    from moto import mock_aws

    with mock_aws():
        client = boto3.client("sqs", region_name="us-east-1")
        url = client.create_queue(QueueName="client-test-queue")["QueueUrl"]
        yield client, url


def received(client, url: str, expected: int) -> list[dict]:
    """Every message on the queue (bounded: a receive returns at most 10)."""
    messages_: list[dict] = []
    for _ in range(expected // 10 + 5):
        batch = client.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60)
        messages_ += batch.get("Messages", [])
        if len(messages_) >= expected:
            break
    return messages_


def email(n: int):
    return messages.error_publishing(To(f"User {n}", f"user{n}@example.com"), dataset_name=f"D{n}")


def test_send_puts_the_fixture_on_the_queue(sqs):
    client, url = sqs
    request = messages.dataset_publication_accepted(
        To("Alice", "alice@example.com"),
        dataset_name="My Dataset",
        reviewer_name="Bob",
        date="2026-06-18",
    ).with_organization(367)
    message_id = EmailClient(client, url).send(request)
    [message] = received(client, url, 1)
    assert message["MessageId"] == message_id
    assert json.loads(message["Body"]) == json.loads(fixture_body("with-organization.json"))


def test_send_validates_a_raw_body_before_sending(sqs):
    client, url = sqs
    with pytest.raises(ValueError, match="recipients"):
        EmailClient(client, url).send('{"messageId": "x", "recipients": []}')
    assert received(client, url, 0) == []


def test_send_many_batches_and_reports_each_entry(sqs):
    client, url = sqs
    requests = [email(n) for n in range(23)]
    requests[4] = requests[4].with_delay(901)  # beyond SQS's 900 s: SQS refuses this entry alone
    requests.insert(7, '{"messageId": "error-publishing", "recipients": [{"email": "nope"}]}')
    results = EmailClient(client, url).send_many(requests)

    assert [r.index for r in results] == list(range(24))
    failed = {r.index: r for r in results if not r.ok}
    assert set(failed) == {4, 7}
    assert failed[4].code == "InvalidParameterValue" and failed[4].sender_fault
    assert "DelaySeconds" in failed[4].error
    assert failed[7].code == "InvalidRequest" and "recipients[0].email" in failed[7].error

    bodies = [parse_request(m["Body"]) for m in received(client, url, 22)]
    assert len(bodies) == 22
    assert {b.recipients[0].email for b in bodies} == {
        f"user{n}@example.com" for n in range(23) if n != 4
    }
    ids = {r.message_id for r in results if r.ok}
    assert len(ids) == 22


def test_send_many_reports_a_failed_call_on_its_entries(sqs):
    client, _url = sqs
    results = EmailClient(
        client, "https://sqs.us-east-1.amazonaws.com/123456789012/missing"
    ).send_many([email(1), email(2)])
    assert [r.ok for r in results] == [False, False]
    assert all("NonExistentQueue" in (r.code or "") or "exist" in r.error for r in results)


def test_send_many_keeps_each_call_under_the_batch_size_limit(sqs):
    client, url = sqs
    # Three 400 KB requests: one call with all three would exceed what SQS takes per batch.
    big = [email(n).with_context(note="x" * 400_000) for n in range(3)]
    results = EmailClient(client, url).send_many(big)
    assert [r.ok for r in results] == [True, True, True], results
    assert len(received(client, url, 3)) == 3


def test_a_hand_built_request_is_validated_too(sqs):
    from emailops.core.contract import EmailRequest, Recipient

    client, url = sqs
    bad = EmailRequest(message_id="error-publishing", recipients=(Recipient("not-an-address"),))
    with pytest.raises(ValueError, match=r"recipients\[0\]\.email"):
        EmailClient(client, url).send(bad)
    good = EmailRequest(message_id="error-publishing", recipients=(Recipient("a@example.com"),))
    assert EmailClient(client, url).send(good)


class _FailingSqs:
    """An SQS client whose batch send raises ``error``."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def send_message_batch(self, **_kwargs):
        raise self.error


def test_an_aws_answer_and_no_answer_become_results_without_the_client_importing_botocore():
    from botocore.exceptions import ClientError, EndpointConnectionError

    refused = ClientError(
        {
            "Error": {"Code": "AccessDenied", "Message": "not allowed"},
            "ResponseMetadata": {"HTTPStatusCode": 403},
        },
        "SendMessageBatch",
    )
    [result] = EmailClient(_FailingSqs(refused), "url").send_many([email(1)])
    assert (result.code, result.error, result.sender_fault) == ("AccessDenied", "not allowed", True)

    unreachable = EndpointConnectionError(endpoint_url="https://sqs.example")
    [result] = EmailClient(_FailingSqs(unreachable), "url").send_many([email(2)])
    assert result.code is None and not result.sender_fault and "sqs.example" in result.error


def test_an_error_that_is_not_botocore_s_is_not_swallowed():
    with pytest.raises(KeyError):
        EmailClient(_FailingSqs(KeyError("bug")), "url").send_many([email(1)])
