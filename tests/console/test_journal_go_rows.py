"""A Go-era QUEUED row (no ClaimExpiresAt, an old Timestamp) reads the same everywhere: the journal
list, the detail page, ``email_log`` and the API all apply the one lease rule (LeasePolicy) with the
one lease, the consumer's (they disagreed: the list said not stuck while the detail page said
"Stuck since…", and the API said nothing). tests/test_lease_contract.py pins the moment itself."""

from __future__ import annotations

import io
import time
from datetime import UTC, datetime
from html import unescape

import pytest
from django.core.management import call_command
from django.urls import reverse

from api.services import api_token_create
from tests.journal_factory import BASE_TIME, journal_row, put_rows, queue_visibility

pytestmark = pytest.mark.django_db

LIST = "/admin/templates_admin/emailjournalpage/"


def _pages(client, key: str) -> tuple[str, str, str]:
    listing = unescape(client.get(LIST, {"q": "hal@example.com"}).content.decode())
    detail_url = reverse("admin:templates_admin_journal_detail", args=[key])
    detail = unescape(client.get(detail_url).content.decode())
    out = io.StringIO()
    call_command("email_log", "id", key, stdout=out, stderr=io.StringIO())
    return listing, detail, out.getvalue()


def _go_row(dynamodb, *, at: int, producer: str) -> dict:
    """A Go-shaped QUEUED row. The API shows a token only its own rows, so this one carries the
    token's Producer; the lease rule reads only Status, ClaimExpiresAt (absent) and Timestamp."""
    row = journal_row("hal@example.com", at=at, status="QUEUED", go_row=True, Producer=producer)
    put_rows(dynamodb, "email-journal", [row])
    return row


def _api(client, token, key: str) -> dict:
    response = client.get(f"/api/v1/sends/{key}", HTTP_AUTHORIZATION=f"Bearer {token.plaintext}")
    assert response.status_code == 200
    return response.json()


@pytest.fixture
def support(client, make_user):
    client.force_login(make_user("Support"))
    return client


@pytest.fixture
def token(db):
    return api_token_create(name="go-row-reader", emails_per_minute=0)


def test_an_old_go_queued_row_is_stuck_on_every_page_and_in_the_api(aws, support, settings, token):
    settings.CLAIM_LEASE_SECONDS = 0
    row = _go_row(aws.dynamodb, at=BASE_TIME, producer=token.token.namespace)

    listing, detail, log = _pages(support, row["Id"])
    api = _api(support, token, row["Id"])

    lease_end = BASE_TIME + queue_visibility(aws)  # CLAIM_LEASE_SECONDS=0: the consumer's lease
    assert "QUEUED · stuck" in listing
    assert "Stuck since" in detail
    assert "Stuck since" in log
    assert (api["state"], api["stuck"], api["leaseEndsAt"]) == ("stuck", True, lease_end)
    assert api["stuckSince"] == datetime.fromtimestamp(lease_end, UTC).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    assert api["Status"] == "QUEUED" and api["failure"] is None and api["delivery"] is None


def test_a_go_queued_row_within_its_lease_is_in_progress_on_every_page_and_in_the_api(
    aws, support, settings, token
):
    settings.CLAIM_LEASE_SECONDS = 0
    now, lease = int(time.time()), queue_visibility(aws)
    row = _go_row(aws.dynamodb, at=now - lease // 2, producer=token.token.namespace)

    listing, detail, log = _pages(support, row["Id"])
    api = _api(support, token, row["Id"])

    assert (
        "· stuck" not in listing
        and "QUEUED" in listing
        and "Stuck since" not in detail
        and "Stuck since" not in log
    )
    assert "In progress" in detail and "In progress" in log
    assert (api["state"], api["stuck"], api["stuckSince"]) == ("in-progress", False, None)
    assert api["leaseEndsAt"] == row["Timestamp"] + lease
