"""The ``aws`` fixture's promise: every test starts from the just-provisioned account, whatever
the tests before it wrote (tests/support/moto_snapshot.py)."""

from __future__ import annotations

import threading

from emailops import container
from tests import conftest

PROVISIONED_TABLES = [
    "email-erasure-tombstones",
    "email-journal",
    "email-journal-webhook-outbox",
    "email-message-templates",
    "email-preferences",
    "email-rate-counter",
    "email-stats",
    "email-suppression",
]


def dirty(aws) -> None:
    """Everything a test may leave behind: rows, messages, objects, sent mail, new resources."""
    aws.dynamodb.put_item(TableName="email-journal", Item={"Id": {"S": "left-over"}})
    aws.dynamodb.create_table(
        TableName="a-tests-own",
        KeySchema=[{"AttributeName": "Id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "Id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody="left over")
    aws.sqs.create_queue(QueueName="a-tests-own")
    container.current().template_store.write_template("default/left-over.html", "<p>x</p>")
    aws.ses.send_email(
        Source="support@pennsieve.test",
        Destination={"ToAddresses": ["a@example.com"]},
        Message={"Subject": {"Data": "s"}, "Body": {"Text": {"Data": "b"}}},
    )
    aws.sns.create_topic(Name="a-tests-own")


def assert_just_provisioned(aws) -> None:
    assert sorted(aws.dynamodb.list_tables()["TableNames"]) == PROVISIONED_TABLES
    assert aws.dynamodb.scan(TableName="email-journal")["Items"] == []
    assert sorted(aws.sqs.list_queues()["QueueUrls"]) == [aws.queue_url, aws.dlq_url]
    assert aws.queue_messages(aws.queue_url) == []
    assert list(container.current().template_store.list_keys("")) == []
    assert aws.sent_emails() == []
    assert aws.sns.list_topics()["Topics"] == []
    identities = aws.ses.list_identities()["Identities"]
    assert identities == ["support@pennsieve.test"]


def test_a_restored_account_holds_what_provisioning_made_and_nothing_since(aws):
    assert_just_provisioned(aws)
    dirty(aws)

    for _ in range(2):  # the second copy is as clean as the first: copies share nothing
        conftest._MOTO_SNAPSHOTS["base"].restore()
        container.reset()
        assert_just_provisioned(aws)
        dirty(aws)


def test_a_restored_queues_long_poll_wakes_on_a_send(aws):
    """SQS queues wait on a Condition: the copy's must be a new, working one."""
    conftest._MOTO_SNAPSHOTS["base"].restore()
    received: list = []
    waiter = threading.Thread(
        target=lambda: received.extend(
            aws.sqs.receive_message(QueueUrl=aws.queue_url, WaitTimeSeconds=5).get("Messages", [])
        )
    )
    waiter.start()
    aws.sqs.send_message(QueueUrl=aws.queue_url, MessageBody="hello")
    waiter.join(10)

    assert [m["Body"] for m in received] == ["hello"]


def test_aws_events_adds_its_resources_to_the_same_fresh_account(aws_events):
    assert sorted(aws_events.dynamodb.list_tables()["TableNames"]) == sorted(
        [*PROVISIONED_TABLES, "email-delivery-events-unmatched"]
    )
    topics = [t["TopicArn"] for t in aws_events.sns.list_topics()["Topics"]]
    assert topics == [aws_events.topic_arn]
    assert aws_events.queue_messages(aws_events.events_queue_url) == []
