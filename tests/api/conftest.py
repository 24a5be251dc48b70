"""Fixtures for the send API: a producer token and a client that sends it."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
import redis

from api.services import api_token_create
from emailops import container
from emailops.redis import token_rate as ratelimit
from tests.conftest import skip_or_fail


@pytest.fixture
def token(db):
    """A fresh producer token without a rate limit (the limit has its own tests)."""
    return api_token_create(name="test-producer", emails_per_minute=0)


class ApiClient:
    def __init__(self, client, plaintext: str) -> None:
        self.client = client
        self.headers = {"HTTP_AUTHORIZATION": f"Bearer {plaintext}"}

    def send(self, body: str | dict[str, Any]):
        data = body if isinstance(body, str) else json.dumps(body)
        return self.client.post(
            "/api/v1/send", data=data, content_type="application/json", **self.headers
        )

    def row(self, key: str):
        return self.client.get(f"/api/v1/sends/{key}", **self.headers)


@pytest.fixture
def api_client(client, token) -> ApiClient:
    return ApiClient(client, token.plaintext)


@pytest.fixture
def redis_client(settings):
    client = ratelimit.connect_fail_fast(settings.REDIS_URL)
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
    monkeypatch.setattr(container.Container, "token_rate_limiter", property(lambda _: made))
    return made
