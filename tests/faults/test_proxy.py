"""The fault proxy itself: boto3 sees each injected fault as it would see AWS's, and the records say
what moto really accepted."""

from __future__ import annotations

import time
from dataclasses import replace

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError

from tests.support.aws_proxy import (
    dynamodb_throttling,
    latency,
    lost_ses_replies,
    max_in_window,
    ses_5xx,
    ses_throttling,
    sqs_5xx,
)

pytestmark = pytest.mark.faults

SENDER = "sender@example.com"


def client(proxy, service: str, attempts: int = 1):
    return boto3.client(
        service,
        endpoint_url=proxy.url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"mode": "standard", "total_max_attempts": attempts}),
    )


def send(ses, to: str) -> dict:
    return ses.send_email(
        Source=SENDER,
        Destination={"ToAddresses": [f"Some One <{to}>"]},
        Message={"Subject": {"Data": "s"}, "Body": {"Text": {"Data": "b"}}},
        Tags=[{"Name": "JournalKey", "Value": "k-1"}],
    )


@pytest.fixture
def ses(proxy):
    ses = client(proxy, "ses")
    ses.verify_email_identity(EmailAddress=SENDER)
    return ses


def test_a_plain_send_is_forwarded_and_recorded_with_recipient_and_tag(proxy, ses):
    message_id = send(ses, "Ann@Example.com")["MessageId"]
    (record,) = proxy.ses_sends()
    assert record.recipients == ("ann@example.com",)
    assert record.journal_key == "k-1" and record.provider_id == message_id
    assert record.delivered


def test_ses_throttling_looks_like_ses_and_botocore_retries_it(proxy, ses):
    proxy.add(ses_throttling())
    with pytest.raises(ClientError) as caught:
        send(ses, "a@example.com")
    assert caught.value.response["Error"]["Code"] == "Throttling"
    assert "Maximum sending rate exceeded" in caught.value.response["Error"]["Message"]
    proxy.clear()
    proxy.add(replace(ses_throttling(), limit=2))
    send(client(proxy, "ses", attempts=3), "b@example.com")  # two throttled, the third goes
    outcomes = [c.fault or "ok" for c in proxy.records() if c.operation == "SendEmail"]
    assert outcomes == ["SES throttling", "SES throttling", "SES throttling", "ok"]
    assert [s.recipients for s in proxy.ses_sends()] == [("b@example.com",)]


def test_a_lost_reply_leaves_the_send_accepted_but_unheard(proxy, ses):
    before = ses.get_send_quota()["SentLast24Hours"]
    proxy.add(lost_ses_replies())
    with pytest.raises(ConnectionClosedError):
        send(ses, "lost@example.com")
    proxy.clear()
    (record,) = proxy.ses_sends()
    assert record.reply_lost and record.accepted and not record.delivered
    assert ses.get_send_quota()["SentLast24Hours"] == before + 1  # moto took it


def test_a_lost_reply_can_also_be_a_500(proxy, ses):
    proxy.add(lost_ses_replies(as_500=True))
    with pytest.raises(ClientError) as caught:
        send(ses, "lost500@example.com")
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    (record,) = proxy.ses_sends()
    assert record.reply_lost and record.recipients == ("lost500@example.com",)


def test_error_faults_per_service(proxy, ses):
    proxy.add(ses_5xx(), dynamodb_throttling(), sqs_5xx())
    with pytest.raises(ClientError) as ses_error:
        send(ses, "x@example.com")
    with pytest.raises(ClientError) as dynamodb_error:
        client(proxy, "dynamodb").get_item(TableName="t", Key={"Id": {"S": "k"}})
    with pytest.raises(ClientError) as sqs_error:
        client(proxy, "sqs").list_queues()
    assert ses_error.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    assert (
        dynamodb_error.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    )
    assert sqs_error.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    ses.get_send_quota()  # not a send: the SES fault leaves it alone
    assert proxy.ses_sends() == []
    (dynamodb_call,) = [c for c in proxy.records() if c.service == "dynamodb"]
    assert dynamodb_call.key == "k" and dynamodb_call.operation == "GetItem"


def test_latency_and_time_windows(proxy, ses):
    proxy.add(latency(0.3, service="ses"))
    started = time.monotonic()
    ses.get_send_quota()
    assert time.monotonic() - started >= 0.3
    proxy.clear()
    proxy.add(ses_5xx(operations=None).during(5, after=60))  # not yet
    ses.get_send_quota()


def test_max_in_window():
    assert max_in_window([]) == 0
    assert max_in_window([0.0, 0.5, 0.99, 1.0, 1.5]) == 3
    assert max_in_window([0.0, 1.0, 2.0]) == 1
