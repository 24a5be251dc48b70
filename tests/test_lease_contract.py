"""One lease: with CLAIM_LEASE_SECONDS unset and a 300 s visibility timeout, a Go-era QUEUED row (no
ClaimExpiresAt) reads "stuck" at the same moment on the journal list, the detail page,
``email_log``, the API and the stuck-claims check, and the consumer takes it over at that moment,
not before: on the fake journal (tests/fakes.py) and on DynamoDB (moto).

They disagreed: the readers ended a Go row's claim 60 s after its Timestamp while the consumer
waited for the queue's visibility timeout, so the console called a row stuck that the consumer
would not claim for four more minutes.

The readers take "now" from the clock; each reader's clock is set to the moment under test.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from html import unescape
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.urls import reverse

from api.services import api_token_create
from emailops import container
from emailops.aws.journal import DynamoJournal
from emailops.core.ports import Claim, ClaimState
from monitoring import checks as monitoring
from templates_admin.display import local_text
from tests.fakes import InMemoryJournal
from tests.journal_factory import BASE_TIME, journal_row, put_rows, queue_visibility

pytestmark = pytest.mark.django_db

VISIBILITY = 300
CLAIMED_AT = BASE_TIME  # the Go row's Timestamp
LEASE_END = CLAIMED_AT + VISIBILITY
RECIPIENT = "hal@example.com"
CONSUMERS_KEY = f"go-1:{RECIPIENT}"  # the queue's key of the request the consumer receives again
LIST = "/admin/templates_admin/emailjournalpage/"


def _set_clocks(monkeypatch, now: int) -> None:
    """Every reader's "now" (the pages', the API's, email_log's) at ``now``."""
    import api.selectors
    import templates_admin.journal.views
    from templates_admin.management.commands import email_log

    monkeypatch.setattr(templates_admin.journal.views, "time", SimpleNamespace(time=lambda: now))
    monkeypatch.setattr(api.selectors, "time", SimpleNamespace(time=lambda: now))
    at = SimpleNamespace(now=lambda: datetime.fromtimestamp(now, UTC))
    monkeypatch.setattr(email_log, "timezone", at)


def _go_row(key: str | None = None, **extra) -> dict:
    return journal_row(RECIPIENT, at=CLAIMED_AT, status="QUEUED", go_row=True, key=key, **extra)


def _readers(client, token, key: str, now: int) -> dict[str, tuple[bool, bool]]:
    """What each reader says of the row at ``now``: (stuck?, names LEASE_END as the claim's end?)."""
    listing = unescape(client.get(LIST, {"q": RECIPIENT}).content.decode())
    detail_url = reverse("admin:templates_admin_journal_detail", args=[key])
    detail = unescape(client.get(detail_url).content.decode())
    out = io.StringIO()
    call_command("email_log", "id", key, stdout=out, stderr=io.StringIO())
    log = out.getvalue()
    api = client.get(f"/api/v1/sends/{key}", HTTP_AUTHORIZATION=f"Bearer {token.plaintext}")
    assert api.status_code == 200
    body = api.json()
    check = {
        row["key"]: row
        for row in monitoring.stuck_claims_check(adapters=container.current(), now=now)["rows"]
    }
    end = local_text(LEASE_END)  # "Its claim lasts until <end>" or "Stuck since <end>"
    return {
        "list": ("QUEUED · stuck" in listing, "QUEUED" in listing),  # the list names no time
        "detail": ("Stuck since" in detail, end in detail),
        "email_log": ("Stuck since" in log, end in log),
        "api": (body["stuck"], body["leaseEndsAt"] == LEASE_END),
        "stuck-claims check": (key in check, check.get(key, {}).get("leaseEndedAt") == LEASE_END),
    }


@pytest.fixture(params=["fake", "dynamo"])
def journal(request, aws):
    """The consumer's journal, with the Go row the request's key names."""
    if request.param == "fake":
        fake = InMemoryJournal()
        fake.rows[CONSUMERS_KEY] = _go_row(CONSUMERS_KEY)
        return fake
    put_rows(aws.dynamodb, "email-journal", [_go_row(CONSUMERS_KEY)])
    return DynamoJournal(aws.dynamodb, "email-journal")


@pytest.mark.parametrize("after", [0, 1], ids=["at-the-lease-end", "a-second-later"])
def test_a_go_rows_claim_ends_at_one_moment_for_every_reader_and_the_consumer(
    aws, client, make_user, settings, monkeypatch, journal, after
):
    settings.CLAIM_LEASE_SECONDS = 0
    queue_visibility(aws, VISIBILITY)
    container.reset()
    token = api_token_create(name="lease-reader", emails_per_minute=0)
    # The API shows a token only its own rows, so the readers' row carries its Producer (the
    # lease rule reads only Status, ClaimExpiresAt, absent here, and Timestamp).
    readers_row = _go_row(Producer=token.token.namespace)
    put_rows(aws.dynamodb, "email-journal", [readers_row])
    client.force_login(make_user("Support"))
    now = LEASE_END + after
    _set_clocks(monkeypatch, now)

    said = _readers(client, token, readers_row["Id"], now)

    stuck = after > 0  # a lease ends when its end is past, not at it
    assert {name: verdict for name, (verdict, _) in said.items()} == dict.fromkeys(said, stuck)
    named = {name: moment for name, (_, moment) in said.items()}
    assert named == dict(dict.fromkeys(said, True), **{"stuck-claims check": stuck})

    from worker.wiring import build_consumer

    lease = build_consumer(
        adapters=container.current(), concurrency=1
    ).pipeline.settings.lease_seconds  # what it claims with
    claim = Claim(
        key=CONSUMERS_KEY,
        message_id="added-to-team",
        recipient=RECIPIENT,
        context={},
        now=now,
        lease_seconds=lease,
        ttl_seconds=86_400,
    )
    result = journal.claim(claim)

    assert result.state is (ClaimState.CLAIMED if stuck else ClaimState.IN_PROGRESS)
    if not stuck:
        assert result.lease_ends_at == LEASE_END  # the moment every reader names
