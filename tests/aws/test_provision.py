"""Provisioning against moto: idempotent, and it only adds what an existing resource lacks."""

from __future__ import annotations

import json

from emailops.aws import provision
from emailops.aws.provision import JOURNAL_INDEXES


class Report(list):
    def __call__(self, line: str) -> None:
        self.append(line)


def indexes(aws, table: str) -> dict[str, list[tuple[str, str]]]:
    described = aws.dynamodb.describe_table(TableName=table)["Table"]
    return {
        i["IndexName"]: [(k["AttributeName"], k["KeyType"]) for k in i["KeySchema"]]
        for i in described.get("GlobalSecondaryIndexes", [])
    }


def test_the_journal_table_has_its_key_indexes_and_ttl(aws):
    described = aws.dynamodb.describe_table(TableName="email-journal")["Table"]
    assert described["KeySchema"] == [{"AttributeName": "Id", "KeyType": "HASH"}]
    assert indexes(aws, "email-journal") == {
        "RecipientSentAtIndex": [("Recipient", "HASH"), ("SentAtKey", "RANGE")],
        "RecipientKeySentAtIndex": [("RecipientKey", "HASH"), ("SentAtKey", "RANGE")],
        "SesMessageIdIndex": [("SesMessageId", "HASH")],
    }
    ttl = aws.dynamodb.describe_time_to_live(TableName="email-journal")["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "ExpiresAt"}


def test_the_templates_table(aws):
    described = aws.dynamodb.describe_table(TableName="email-message-templates")["Table"]
    assert described["KeySchema"] == [{"AttributeName": "MessageId", "KeyType": "HASH"}]


def test_running_again_changes_nothing(aws):
    before = {
        t: aws.dynamodb.describe_table(TableName=t)["Table"]
        for t in ("email-journal", "email-message-templates")
    }
    report = Report()
    for _ in range(2):
        provision.ensure_templates_table(aws.dynamodb, "email-message-templates", report)
        provision.ensure_journal_table(aws.dynamodb, "email-journal", report)
        url = provision.ensure_queue(aws.sqs, "email-service-queue", report, visibility_timeout=99)
        assert url == aws.queue_url
    assert (
        report
        == [
            "table email-message-templates: exists",
            "table email-journal: exists",
            f"queue email-service-queue: exists ({aws.queue_url})",
        ]
        * 2
    )
    for table, described in before.items():
        after = aws.dynamodb.describe_table(TableName=table)["Table"]
        assert after["KeySchema"] == described["KeySchema"]
        assert after.get("GlobalSecondaryIndexes") == described.get("GlobalSecondaryIndexes")
    attrs = aws.sqs.get_queue_attributes(QueueUrl=aws.queue_url, AttributeNames=["All"])[
        "Attributes"
    ]
    assert attrs["VisibilityTimeout"] == "30"  # an existing queue keeps its attributes
    assert len(aws.sqs.list_queues()["QueueUrls"]) == 2


def test_missing_indexes_are_added_to_an_existing_journal(aws):
    # The Go service's table: only its own index, no TTL.
    aws.dynamodb.create_table(
        TableName="go-journal",
        KeySchema=[{"AttributeName": "Id", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": "Id", "AttributeType": "S"},
            {"AttributeName": "Recipient", "AttributeType": "S"},
            {"AttributeName": "SentAtKey", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "RecipientSentAtIndex",
                "KeySchema": [
                    {"AttributeName": "Recipient", "KeyType": "HASH"},
                    {"AttributeName": "SentAtKey", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    aws.dynamodb.put_item(
        TableName="go-journal",
        Item={"Id": {"S": "k"}, "Recipient": {"S": "a@x.com"}, "SentAtKey": {"S": "1"}},
    )
    report = Report()
    provision.ensure_journal_table(aws.dynamodb, "go-journal", report)
    assert set(indexes(aws, "go-journal")) == set(JOURNAL_INDEXES)
    assert indexes(aws, "go-journal")["RecipientKeySentAtIndex"] == [
        ("RecipientKey", "HASH"),
        ("SentAtKey", "RANGE"),
    ]
    assert any("added index RecipientKeySentAtIndex" in line for line in report)
    assert any("added index SesMessageIdIndex" in line for line in report)
    assert not any("added index RecipientSentAtIndex" in line for line in report)
    ttl = aws.dynamodb.describe_time_to_live(TableName="go-journal")["TimeToLiveDescription"]
    assert ttl["TimeToLiveStatus"] == "ENABLED"
    assert ttl["AttributeName"] == "ExpiresAt"
    # Data is untouched, and a second run has nothing left to do.
    assert aws.dynamodb.get_item(TableName="go-journal", Key={"Id": {"S": "k"}})["Item"][
        "Recipient"
    ] == {"S": "a@x.com"}
    again = Report()
    provision.ensure_journal_table(aws.dynamodb, "go-journal", again)
    assert again == ["table go-journal: exists"]


def test_a_fresh_queue_gets_a_dead_letter_queue(aws):
    report = Report()
    url = provision.ensure_queue(
        aws.sqs, "fresh", report, visibility_timeout=45, max_receive_count=5
    )
    attrs = aws.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attrs["VisibilityTimeout"] == "45"
    policy = json.loads(attrs["RedrivePolicy"])
    assert policy["deadLetterTargetArn"].endswith(":fresh-dlq")
    assert int(policy["maxReceiveCount"]) == 5
    dlq = aws.sqs.get_queue_url(QueueName="fresh-dlq")["QueueUrl"]
    dlq_attrs = aws.sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["All"])["Attributes"]
    assert dlq_attrs["MessageRetentionPeriod"] == "1209600"
    assert "dead-letter queue fresh-dlq" in report[-1]


def test_an_existing_queue_without_dead_letter_queue_gains_one(aws):
    url = aws.sqs.create_queue(QueueName="legacy", Attributes={"VisibilityTimeout": "120"})[
        "QueueUrl"
    ]
    aws.sqs.send_message(QueueUrl=url, MessageBody="keep me")
    assert provision.ensure_queue(aws.sqs, "legacy", Report(), visibility_timeout=30) == url
    attrs = aws.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attrs["VisibilityTimeout"] == "120"
    assert json.loads(attrs["RedrivePolicy"])["deadLetterTargetArn"].endswith(":legacy-dlq")
    assert [m["Body"] for m in aws.queue_messages(url)] == ["keep me"]
    # And now it is complete: a second run reports it as it is.
    report = Report()
    assert provision.ensure_queue(aws.sqs, "legacy", report) == url
    assert report == [f"queue legacy: exists ({url})"]
