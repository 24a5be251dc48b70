"""The requests the fault suite sends, the journal keys they must end up under, and the consumer
settings that make a faulty run converge in seconds rather than minutes."""

from __future__ import annotations

import json

from emailops.core.contract import parse_request
from emailops.core.dedupe import dedupe_key

VISIBILITY_SECONDS = 8  # short, so records a killed consumer held come back fast
FAST_RETRIES = {
    "RETRY_BACKOFF_BASE_SECONDS": "1",
    # The back-off's cap (2 s here) is a fixed value, not a variable: set by these settings.
    "DJANGO_SETTINGS_MODULE": "tests.support.fast_settings",
    "SES_MAX_SEND_RATE": "0",  # no shared limit: moto's sandbox quota (1/s) would make it crawl
}


def requests(prefix: str, count: int, *, several_every: int = 5, several: int = 3) -> list[dict]:
    """``count`` requests; every ``several_every``-th has ``several`` recipients. Every address is
    unique in the run, so an address names one (request, recipient) pair."""
    bodies = []
    for i in range(count):
        people = several if i % several_every == 0 else 1
        body = {
            "messageId": "added-to-team",
            "recipients": [
                {"email": f"{prefix}{i}-{j}@example.com", "name": f"Person {i}.{j}"}
                for j in range(people)
            ],
            "context": {"teamName": f"Team {i}", "administrator": "Ada"},
        }
        if i % 3 == 0:
            body["dedupeId"] = f"{prefix}-{i}"
        bodies.append(body)
    return bodies


def expected_keys(bodies: list[dict]) -> dict[str, str]:
    """Recipient address (lowercased) → the journal key its row must have."""
    expected = {}
    for body in bodies:
        request = parse_request(json.dumps(body))
        for recipient in request.recipients:
            expected[recipient.email.lower()] = dedupe_key(request, recipient.email)
    return expected
