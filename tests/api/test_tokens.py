"""Producer tokens: hashed at rest, shown once, revocable; bearer auth and each token's limit."""

from __future__ import annotations

import io
import json
import time

import pytest
from django.core.management import call_command

from api.models import ApiToken
from api.services import api_token_authenticate, api_token_create, api_token_revoke, token_hash
from emailops import container
from emailops.redis import token_rate as ratelimit

pytestmark = pytest.mark.django_db


def test_a_token_is_stored_only_as_its_hash():
    new = api_token_create(name="publishing", emails_per_minute=5)

    stored = ApiToken.objects.get()
    assert stored.token_hash == token_hash(new.plaintext) != new.plaintext
    assert new.plaintext.startswith(stored.prefix) and len(new.plaintext) > 40
    assert api_token_authenticate(new.plaintext) == stored
    assert api_token_authenticate(new.plaintext + "x") is None
    assert stored.last_used_at is None
    assert ApiToken.objects.get().last_used_at is not None  # set by authenticate


def test_create_api_token_prints_the_token_once_on_its_last_line():
    out = io.StringIO()
    call_command("create_api_token", "billing", "--rate", "30", stdout=out)

    lines = out.getvalue().strip().splitlines()
    token = api_token_authenticate(lines[-1])
    assert token is not None and token.name == "billing" and token.emails_per_minute == 30
    assert all(lines[-1] not in line for line in lines[:-1])


@pytest.mark.parametrize(
    "header",
    [None, "Bearer", "Bearer eo_not-a-real-token", "Basic dXNlcjpwdw==", "Token {token}"],
)
def test_without_a_valid_bearer_token_the_api_answers_401(client, header):
    new = api_token_create(name="p", emails_per_minute=0)
    extra = {"HTTP_AUTHORIZATION": header.format(token=new.plaintext)} if header else {}

    response = client.post("/api/v1/send", data="{}", content_type="application/json", **extra)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"
    assert response.json() == {"error": "missing, unknown or revoked bearer token", "field": None}


def test_a_revoked_token_is_refused_at_once(client, aws):
    new = api_token_create(name="p", emails_per_minute=0)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {new.plaintext}"}
    assert client.get("/api/v1/sends/x", **auth).status_code != 401

    assert api_token_revoke(token=new.token) is True
    assert api_token_revoke(token=new.token) is False  # the first revocation time is kept

    assert client.get("/api/v1/sends/x", **auth).status_code == 401


def test_a_token_past_its_own_limit_gets_429_with_retry_after(client, aws, limiter, clock):
    chatty = api_token_create(name="chatty", emails_per_minute=2)
    quiet = api_token_create(name="quiet", emails_per_minute=2)

    def get(new):
        return client.get("/api/v1/sends/x", HTTP_AUTHORIZATION=f"Bearer {new.plaintext}")

    assert [get(chatty).status_code for _ in range(2)] == [404, 404]
    clock[0] += 20
    refused = get(chatty)
    assert refused.status_code == 429
    assert refused["Retry-After"] == "40"
    assert "rate limit" in refused.json()["error"]
    assert get(quiet).status_code == 404  # limits are per token
    clock[0] += 40
    assert get(chatty).status_code == 404  # a new minute


def test_the_window_counts_per_token_and_resets_each_minute(limiter, clock):
    assert [limiter.hit("a", per_minute=2).allowed for _ in range(3)] == [True, True, False]
    assert limiter.hit("b", per_minute=2).allowed
    clock[0] += 45
    assert limiter.hit("a", per_minute=2).retry_after == 15
    clock[0] += 15
    assert limiter.hit("a", per_minute=2).allowed
    assert limiter.hit("a", per_minute=0).allowed  # 0: no limit, nothing counted


def test_a_request_costs_its_emails_and_a_refused_one_costs_nothing(limiter, clock):
    assert limiter.hit("a", per_minute=60, cost=50).allowed
    refused = limiter.hit("a", per_minute=60, cost=50)
    assert not refused.allowed and refused.retry_after == 60
    assert limiter.hit("a", per_minute=60, cost=10).allowed  # the refused 50 were not counted
    assert not limiter.hit("a", per_minute=60, cost=1).allowed


def test_an_unreachable_redis_refuses_quickly_instead_of_allowing_everything():
    limiter = ratelimit.TokenRateLimiter(
        ratelimit.connect_fail_fast("redis://127.0.0.1:1/0"), prefix="test:api:dead:"
    )
    started = time.monotonic()

    with pytest.raises(ratelimit.RateLimitUnavailable):
        limiter.hit("a", per_minute=1)
    assert time.monotonic() - started < 2  # no retries piled up on every request


def _many(count: int, dedupe_id: str) -> dict:
    return {
        "messageId": "added-to-team",
        "dedupeId": dedupe_id,
        "recipients": [{"email": f"r{i}@example.com"} for i in range(count)],
        "context": {"teamName": "T", "administrator": "A"},
    }


def _post(client, new, body):
    data = body if isinstance(body, str) else json.dumps(body)
    return client.post(
        "/api/v1/send",
        data=data,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {new.plaintext}",
    )


def test_the_limit_counts_emails_not_requests(client, aws, limiter):
    aws.load_samples()
    producer = api_token_create(name="burst", emails_per_minute=60)

    first = _post(client, producer, _many(50, "burst-1"))
    second = _post(client, producer, _many(50, "burst-2"))

    assert first.status_code == 200, first.content
    assert second.status_code == 429 and int(second["Retry-After"]) > 0
    assert len(aws.sent_emails()) == 50  # not 100


def test_more_recipients_than_api_max_recipients_is_a_400_and_nothing_is_sent(
    client, aws, settings
):
    aws.load_samples()
    settings.API_MAX_RECIPIENTS = 50
    producer = api_token_create(name="big", emails_per_minute=0)

    response = _post(client, producer, _many(100, "big-1"))

    assert response.status_code == 400
    assert response.json()["field"] == "recipients"
    assert "API_MAX_RECIPIENTS=50" in response.json()["error"]
    assert aws.sent_emails() == []
    assert aws.dynamodb.scan(TableName="email-journal")["Count"] == 0


def test_a_request_larger_than_the_token_may_send_in_a_minute_is_a_400(client, aws, limiter):
    aws.load_samples()
    producer = api_token_create(name="small", emails_per_minute=5)

    response = _post(client, producer, _many(6, "small-1"))

    assert response.status_code == 400 and "(5)" in response.json()["error"]
    assert aws.sent_emails() == []


def test_a_body_over_256_kb_is_a_413(client, aws):
    producer = api_token_create(name="huge", emails_per_minute=0)
    body = json.dumps(_many(1, "huge-1") | {"context": {"teamName": "x" * 270_000}})

    response = _post(client, producer, body)

    assert response.status_code == 413
    assert aws.dynamodb.scan(TableName="email-journal")["Count"] == 0


def test_with_redis_down_the_api_refuses_with_503_and_retry_after(client, aws, monkeypatch):
    aws.load_samples()
    dead = ratelimit.TokenRateLimiter(
        ratelimit.connect_fail_fast("redis://127.0.0.1:1/0"), prefix="test:api:dead:"
    )
    monkeypatch.setattr(container.Container, "token_rate_limiter", property(lambda _: dead))
    producer = api_token_create(name="limited", emails_per_minute=60)

    response = _post(client, producer, _many(1, "down-1"))

    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert "Connection" not in response.json()["error"]
    assert aws.sent_emails() == []
