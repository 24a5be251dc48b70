"""Producer tokens: hashed at rest, shown once, revocable; bearer auth and each token's limit."""

from __future__ import annotations

import io
import time
import uuid

import pytest
import redis
from django.core.management import call_command

from api import ratelimit
from api.models import ApiToken
from api.services import api_token_authenticate, api_token_create, api_token_revoke, token_hash
from tests.conftest import skip_or_fail

pytestmark = pytest.mark.django_db


def test_a_token_is_stored_only_as_its_hash():
    new = api_token_create(name="publishing", requests_per_minute=5)

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
    assert token is not None and token.name == "billing" and token.requests_per_minute == 30
    assert all(lines[-1] not in line for line in lines[:-1])


@pytest.mark.parametrize(
    "header",
    [None, "Bearer", "Bearer eo_not-a-real-token", "Basic dXNlcjpwdw==", "Token {token}"],
)
def test_without_a_valid_bearer_token_the_api_answers_401(client, header):
    new = api_token_create(name="p", requests_per_minute=0)
    extra = {"HTTP_AUTHORIZATION": header.format(token=new.plaintext)} if header else {}

    response = client.post("/api/v1/send", data="{}", content_type="application/json", **extra)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"
    assert response.json() == {"error": "missing, unknown or revoked bearer token", "field": None}


def test_a_revoked_token_is_refused_at_once(client, aws):
    new = api_token_create(name="p", requests_per_minute=0)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {new.plaintext}"}
    assert client.get("/api/v1/sends/x", **auth).status_code != 401

    assert api_token_revoke(token=new.token) is True
    assert api_token_revoke(token=new.token) is False  # the first revocation time is kept

    assert client.get("/api/v1/sends/x", **auth).status_code == 401


@pytest.fixture
def redis_client(settings):
    client = ratelimit.connect(settings.REDIS_URL)
    try:
        client.ping()
    except redis.RedisError as exc:
        skip_or_fail(f"Redis at {settings.REDIS_URL} is not reachable: {exc}")
    return client


@pytest.fixture
def clock():
    return [1_800_000_000.0]  # the start of a minute


@pytest.fixture
def limiter(redis_client, clock, monkeypatch):
    """The API's limiter on real Redis, with a clock the test moves and keys of its own."""
    made = ratelimit.TokenRateLimiter(
        redis_client, prefix=f"test:api:{uuid.uuid4().hex}:", clock=lambda: clock[0]
    )
    monkeypatch.setattr(ratelimit, "token_rate_limiter", lambda: made)
    return made


def test_a_token_past_its_own_limit_gets_429_with_retry_after(client, aws, limiter, clock):
    chatty = api_token_create(name="chatty", requests_per_minute=2)
    quiet = api_token_create(name="quiet", requests_per_minute=2)

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


def test_an_unreachable_redis_lets_requests_through():
    limiter = ratelimit.TokenRateLimiter(
        ratelimit.connect("redis://127.0.0.1:1/0"), prefix="test:api:dead:"
    )
    started = time.monotonic()

    assert limiter.hit("a", per_minute=1).allowed
    assert time.monotonic() - started < 2  # no retries piled up on every request
