"""Each token is its own tenant: it reads only rows it wrote, its dedupeIds are its own, and what
it reads (GET or the POST's results) is an allow-list of the manifest's variables, audited."""

from __future__ import annotations

import json

import pytest

from api.selectors import producer_view
from api.services import api_token_create
from audit.models import JournalReadAudit
from emailops import container
from emailops.aws.journal_codec import row_from_item
from templates_admin.journal.presentation import MASK
from tests.api.conftest import ApiClient
from tests.conftest import fixture_body
from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = pytest.mark.django_db


@pytest.fixture
def stack(aws):
    aws.load_samples()
    return aws


@pytest.fixture
def producers(client):
    """Two producers, A and B, each with its own token."""
    a = api_token_create(name="producer-a", emails_per_minute=0)
    b = api_token_create(name="producer-b", emails_per_minute=0)
    return a, ApiClient(client, a.plaintext), b, ApiClient(client, b.plaintext)


def _invite(team: str, **context) -> dict:
    body = json.loads(fixture_body("with-dedupe-id.json"))
    body["dedupeId"] = "invite-99"
    body["recipients"] = [{"email": "bob@example.com"}]
    body["context"] |= {"teamName": team, **context}
    return body


def test_another_tokens_row_is_a_404_and_its_secrets_never_leave(stack, producers):
    _, as_a, _, as_b = producers
    sent = as_a.send(
        _invite("Imaging", resetUrl="https://x.test/r/s3cr3t", verificationCode="981276")
    )
    assert sent.status_code == 200, sent.content
    (result,) = sent.json()["results"]

    for guess in (result["id"], "invite-99:bob@example.com"):
        refused = as_b.row(guess)
        assert refused.status_code == 404
        assert b"s3cr3t" not in refused.content and b"981276" not in refused.content

    own = as_a.row(result["id"])
    assert own.status_code == 200
    context = own.json()["Context"]
    # Only what the manifest declares for added-to-team; undeclared keys are gone, not masked.
    assert set(context) <= {"administrator", "host", "organizationNodeId", "teamName"}
    assert context["teamName"] == "Imaging"
    assert b"s3cr3t" not in own.content and b"981276" not in own.content


def test_a_row_the_api_did_not_write_is_a_404(stack, api_client):
    queue_row = journal_row("pat@example.com", at=BASE_TIME, key="evt-1:pat@example.com")
    put_rows(stack.dynamodb, "email-journal", [queue_row])

    assert api_client.row(queue_row["Id"]).status_code == 404


def test_the_same_dedupe_id_from_two_tokens_is_two_rows_and_two_emails(stack, producers):
    a, as_a, _, as_b = producers
    attacker = as_b.send(_invite("Attacker-chosen team"))
    real = as_a.send(_invite("Real team"))

    assert attacker.status_code == real.status_code == 200
    (b_result,), (a_result,) = attacker.json()["results"], real.json()["results"]
    assert a_result["id"] != b_result["id"]
    assert a_result["id"] == f"{a.token.namespace}:invite-99:bob@example.com"
    assert a_result["status"] == "SENT" and a_result["sesMessageId"] != b_result["sesMessageId"]
    emails = stack.sent_emails()
    assert len(emails) == 2
    assert "Real team" in str(emails[-1].body)
    assert container.current().journal.get(a_result["id"])["Producer"] == a.token.namespace


def test_a_queue_row_under_a_tokens_key_is_never_taken_nor_reported(stack, api_client, token):
    # An SQS producer chose a dedupeId that mimics this token's key space.
    key = f"{token.token.namespace}:invite-99:bob@example.com"
    foreign = journal_row("bob@example.com", at=BASE_TIME, key=key, SesMessageId="foreign-id")
    put_rows(stack.dynamodb, "email-journal", [foreign])

    response = api_client.send(_invite("Real team"))

    assert response.status_code == 422
    (result,) = response.json()["results"]
    assert result["status"] is None and result["sesMessageId"] is None
    assert b"foreign-id" not in response.content
    assert stack.sent_emails() == []
    assert "Producer" not in container.current().journal.get(key)


def test_the_rows_a_send_hands_back_are_audited(stack, api_client, token):
    response = api_client.send(fixture_body("multi-recipient.json"))

    assert response.status_code == 200
    ids = [r["id"] for r in response.json()["results"]]
    audits = JournalReadAudit.objects.filter(channel="api", action="send")
    assert sorted(a.query for a in audits) == sorted(ids)
    assert {a.token_prefix for a in audits} == {token.token.prefix}


def test_the_producer_view_is_an_allow_list_with_sensitive_names_masked(settings):
    row = journal_row(
        "pat@example.com",
        at=BASE_TIME,
        message_id="password-reset",
        Context={"resetUrl": "https://x/s3cr3t", "pin": "1234", "name": "Pat", "extra": "x"},
    )
    manifest = {"password-reset": ["resetUrl", "pin", "name"]}

    adapters = container.current()
    lease, words = adapters.lease_policy, adapters.config.console.sensitive_keys
    context = producer_view(row_from_item(row), manifest, lease=lease, sensitive=words).Context

    assert context == {"resetUrl": MASK, "pin": MASK, "name": "Pat"}
    # nothing declared: nothing returned
    assert producer_view(row_from_item(row), {}, lease=lease, sensitive=words).Context == {}


def test_a_queue_dedupe_id_in_the_apis_key_space_is_refused_before_it_claims(
    stack, api_client, token
):
    """The attack: a queue message with dedupeId ``api:<token>:invite-99`` planted that token's key,
    and the token's later send with dedupeId invite-99 got 422 and sent nothing."""
    planted = _invite("Queue team")
    planted["dedupeId"] = f"{token.token.namespace}:invite-99"
    outcome = (
        container.current()
        .build_pipeline(lease_seconds=60)
        .process(json.dumps(planted), record_id="sqs-1")
    )
    assert outcome.action.value == "dead-letter"
    assert "reserved key space" in outcome.reason and "dedupeId" in outcome.reason
    key = f"{token.token.namespace}:invite-99:bob@example.com"
    assert container.current().journal.get(key) is None  # no row in the token's key space
    assert stack.sent_emails() == []

    response = api_client.send(_invite("Real team"))
    assert response.status_code == 200, response.content
    assert len(stack.sent_emails()) == 1
