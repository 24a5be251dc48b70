"""The moto server the e2e and fault tests run answers racing conditional claims as DynamoDB does:
one winner. moto checked the condition and then wrote, unlocked, across its request threads; two
consumers could both claim one email (seen: the e2e duplicate request sent twice under load)."""

from __future__ import annotations

import threading

import boto3
import pytest

from tests.support.stack import MotoServer

pytestmark = pytest.mark.e2e

WRITERS, ROUNDS = 8, 60


def test_of_eight_racing_conditional_claims_exactly_one_wins_every_round():
    moto = MotoServer()
    try:
        clients = [
            boto3.client(
                "dynamodb",
                endpoint_url=moto.url,
                region_name="us-east-1",
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            )
            for _ in range(WRITERS)
        ]
        clients[0].create_table(
            TableName="claims",
            KeySchema=[{"AttributeName": "Id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "Id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        winners_per_round = [claim_race(clients, f"key-{n}") for n in range(ROUNDS)]
    finally:
        moto.stop()
    assert winners_per_round == [1] * ROUNDS


def claim_race(clients, key: str) -> int:
    """Every client claims ``key`` at once, as the journal's claim does; returns how many won."""
    start, won = threading.Barrier(len(clients)), []

    def claim(client) -> None:
        start.wait()
        try:
            client.update_item(
                TableName="claims",
                Key={"Id": {"S": key}},
                UpdateExpression="SET #s = :queued, Body = :body",
                ConditionExpression="attribute_not_exists(Id) OR #s = :failed",
                ExpressionAttributeNames={"#s": "Status"},
                ExpressionAttributeValues={
                    ":queued": {"S": "QUEUED"},
                    ":failed": {"S": "FAILED"},
                    ":body": {"S": "x" * 20_000},  # a row's size widens moto's window
                },
            )
            won.append(client)
        except client.exceptions.ConditionalCheckFailedException:
            pass

    threads = [threading.Thread(target=claim, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(won)
