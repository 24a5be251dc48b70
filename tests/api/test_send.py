"""POST /api/v1/send: the consumer's pipeline, inline, against moto."""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client

from emailops import container
from emailops.core.errors import TransientError
from emailops.core.ports import Claim
from tests.conftest import fixture_body
from tests.fakes import RecordingSender

pytestmark = pytest.mark.django_db


@pytest.fixture
def stack(aws):
    aws.load_samples()
    return aws


def test_a_request_is_sent_and_its_rows_reported(stack, api_client):
    response = api_client.send(fixture_body("minimal.json"))

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["messageId"] == "dataset-publication-accepted"
    (result,) = body["results"]
    assert result["recipient"] == "alice@example.com"
    assert result["status"] == "SENT" and result["error"] is None
    (email,) = stack.sent_emails()
    assert result["sesMessageId"] == email.id
    assert container.current().journal.get(result["id"])["Status"] == "SENT"


def test_bearer_requests_need_no_csrf_token_and_any_json_encoding(stack, token):
    response = Client(enforce_csrf_checks=True).post(
        "/api/v1/send",
        data=fixture_body("minimal.json").encode("utf-16"),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token.plaintext}",
    )

    assert response.status_code == 200, response.content
    assert len(stack.sent_emails()) == 1


def test_a_repeated_dedupe_id_sends_once_and_reports_the_existing_rows(stack, api_client, token):
    first = api_client.send(fixture_body("with-dedupe-id.json"))
    again = api_client.send(fixture_body("with-dedupe-id.json"))

    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()
    (result,) = again.json()["results"]
    assert result["id"] == f"{token.token.namespace}:team-invite-evt-12345:carol@example.com"
    assert len(stack.sent_emails()) == 1


def test_every_recipient_is_reported(stack, api_client):
    response = api_client.send(fixture_body("multi-recipient.json"))

    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["recipient"] for r in results] == ["rev1@example.com", "rev2@example.com"]
    assert {r["status"] for r in results} == {"SENT"}
    assert len(stack.sent_emails()) == 2


@pytest.mark.parametrize(
    "body, field",
    [
        ({"recipients": [{"email": "a@example.com"}]}, "messageId"),
        ({"messageId": "added-to-team", "recipients": []}, "recipients"),
        ({"messageId": "added-to-team", "recipients": ["a@example.com"]}, "recipients[0]"),
        ({"messageId": "added-to-team", "recipients": [{"email": "not-an-address"}]}, "recipients[0].email"),
        ({"messageId": "added-to-team", "recipients": [{"email": "a@example.com", "name": "A\nB"}]}, "recipients[0].name"),
        ({"messageId": "added-to-team", "recipients": [{"email": "a@example.com"}], "context": []}, "context"),
        ({"messageId": "added-to-team", "recipients": [{"email": "a@example.com"}], "dedupeId": 7}, "dedupeId"),
        ({"messageId": "added-to-team", "recipients": [{"email": "a@example.com"}], "context": {"organizationId": "O1"}}, "context.organizationId"),
        ("{not json", None),
        ("[1, 2]", None),
    ],
)  # fmt: skip
def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(stack, api_client, body, field):
    response = api_client.send(body)

    assert response.status_code == 400
    assert response.json()["field"] == field
    assert response.json()["error"].startswith("parse request")
    assert stack.sent_emails() == []
    assert stack.dynamodb.scan(TableName="email-journal")["Count"] == 0


def test_an_unknown_message_id_is_a_422_with_the_failed_rows(stack, api_client):
    response = api_client.send(
        {"messageId": "no-such-email", "recipients": [{"email": "pat@example.com"}]}
    )

    assert response.status_code == 422
    body = response.json()
    assert "no-such-email" in body["error"] and body["messageId"] == "no-such-email"
    (result,) = body["results"]
    assert result["status"] == "FAILED" and "no-such-email" in result["error"]
    assert stack.sent_emails() == []


def test_a_key_too_long_for_the_journal_is_a_422_without_rows(stack, api_client, token):
    body = json.loads(fixture_body("minimal.json")) | {"dedupeId": "d" * 3000}

    response = api_client.send(body)

    assert response.status_code == 422
    (result,) = response.json()["results"]
    assert result["status"] is None and result["id"].startswith(f"{token.token.namespace}:ddd")
    assert stack.sent_emails() == []


def test_transient_ses_trouble_is_a_503_with_retry_after_and_the_retry_sends_once(
    stack, api_client, monkeypatch, settings
):
    settings.RETRY_BACKOFF_BASE_SECONDS = 7
    flaky = RecordingSender(errors=[TransientError("send email", reason="Throttling: slow down")])
    monkeypatch.setattr(container.current().sender, "send", flaky.send)

    response = api_client.send(fixture_body("with-dedupe-id.json"))

    assert response.status_code == 503
    assert response["Retry-After"] == "7"
    (result,) = response.json()["results"]
    assert result["status"] == "FAILED" and result["error"] is None
    # The AWS detail goes to the log only; the client gets a generic message.
    assert response.json()["error"] == "temporarily unavailable; retry after Retry-After seconds"
    assert b"Throttling" not in response.content

    retried = api_client.send(fixture_body("with-dedupe-id.json"))
    assert retried.status_code == 200
    assert retried.json()["results"][0]["status"] == "SENT"
    assert len(flaky.sent) == 1


def test_a_recipient_claimed_by_another_request_is_a_503_until_its_lease_ends(
    stack, api_client, token
):
    body = json.loads(fixture_body("with-dedupe-id.json"))
    namespace = token.token.namespace  # the same producer's request, in another API process
    key = f"{namespace}:team-invite-evt-12345:carol@example.com"
    now = int(time.time())
    container.current().journal.claim(
        Claim(key=key, message_id=body["messageId"], recipient="carol@example.com",
              context=body["context"], now=now, lease_seconds=120, ttl_seconds=86400,
              producer=namespace)
    )  # fmt: skip

    response = api_client.send(body)

    assert response.status_code == 503
    assert 100 <= int(response["Retry-After"]) <= 120
    assert response.json()["results"][0]["status"] == "QUEUED"
    assert stack.sent_emails() == []


def test_a_journal_outage_after_the_send_is_a_503(stack, api_client, monkeypatch):
    journal = container.current().journal

    def broken_get(key):
        raise TransientError("read journal row", key=key, reason="ServiceUnavailable")

    monkeypatch.setattr(journal, "get", broken_get)
    response = api_client.send(fixture_body("minimal.json"))

    assert response.status_code == 503 and response["Retry-After"]
    assert b"ServiceUnavailable" not in response.content  # logged, not told


@pytest.mark.parametrize("spelling", ['"victim2"@example.com', '"Victim2"@Example.COM'])
def test_a_suppressed_address_is_suppressed_however_the_api_spells_it(stack, api_client, spelling):
    """The finding: with victim2@example.com suppressed, the API sent to "victim2"@example.com.
    One normaliser (``address_key``) serves the API's lookups as it serves the queue's."""
    container.current().suppression_list.add(
        "victim2@example.com", reason="complaint", detail="abuse", source="test", now=time.time()
    )
    body = json.loads(fixture_body("minimal.json"))
    body["recipients"] = (
        [{"email": spelling}]
        if "<" not in spelling
        else [{"name": "Vic", "email": "victim2@example.com"}]
    )
    response = api_client.send(body)
    (result,) = response.json()["results"]
    assert result["status"] == "SUPPRESSED", response.content
    assert stack.sent_emails() == []


def test_a_row_the_go_service_put_in_the_table_stops_the_next_send(
    stack, api_client, settings, redis_key
):
    """Issue 35, finding 2, with the default settings (the Redis index on): an item put straight
    into ``email-suppression`` (the Go bounce handler's PutItem), then a send to that address."""
    from tests.worker.test_go_suppressions import go_suppresses

    settings.SUPPRESSION_INDEX_REDIS_KEY = f"{redis_key}:suppressed"
    container.reset()
    body = json.loads(fixture_body("minimal.json"))
    assert api_client.send(body).json()["results"][0]["status"] == "SENT"  # every check warm
    body["recipients"] = [{"email": "Bounced@example.com"}]
    go_suppresses(settings, "Bounced@example.com", reason="bounce")
    (result,) = api_client.send(body).json()["results"]
    assert result["status"] == "SUPPRESSED"
    assert len(stack.sent_emails()) == 1
