"""Fixtures for the send API: a producer token and a client that sends it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from api.services import api_token_create


@pytest.fixture
def token(db):
    """A fresh producer token without a rate limit (the limit has its own tests)."""
    return api_token_create(name="test-producer", requests_per_minute=0)


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
