"""Masking follows the value: a context value under a sensitive key (``verificationCode``) that
the subject carries (``"Your code is {{ verificationCode }}"``) is masked in the journal list, on
the row page, in the CSV, in ``email_log`` and through the API, not only in the context view."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import pytest
from django.core.management import call_command

from api.services import api_token_create
from emailops import container
from emailops.core.contract import parse_request
from emailops.core.dedupe import dedupe_key
from tests.api.conftest import ApiClient

pytestmark = pytest.mark.django_db

CODE = "981276"
JOURNAL = "/admin/templates_admin/emailjournalpage/"
BODY = {
    "messageId": "added-to-team",
    "recipients": [{"email": "coded@example.com"}],
    "context": {
        "teamName": "Ops",
        "administrator": "Dave",
        "verificationCode": CODE,
        "subject": "Your code is {{ .verificationCode }}",
        "pin": "42",  # shorter than 4: masked under its key only
    },
}


@pytest.fixture
def sent(aws):
    aws.load_samples()
    pipeline = container.current().build_pipeline(lease_seconds=60)
    assert pipeline.process(json.dumps(BODY), record_id="sqs-1").sent == 1
    [email] = aws.sent_emails()
    assert CODE in email.subject  # the recipient does get their code
    key = dedupe_key(parse_request(json.dumps(BODY)), "coded@example.com")
    row = container.current().journal_reader.read(key)
    assert row.subject == f"Your code is {CODE}"  # stored as sent
    return row


def test_the_list_the_row_page_and_the_csv_never_show_it(sent, client, make_user):
    client.force_login(make_user("Support"))
    pages = [
        client.get(JOURNAL, {"q": "coded@example.com"}),
        client.get(f"{JOURNAL}entry/{sent.key}/"),
        client.get(f"{JOURNAL}export.csv", {"q": "coded@example.com"}),
    ]
    for response in pages:
        assert response.status_code == 200
        content = (
            b"".join(response.streaming_content) if response.streaming else response.content
        ).decode()
        assert CODE not in content
        assert "Your code is ••••••" in content


def test_email_log_never_prints_it(sent):
    for args in (["recipient", "coded@example.com"], ["id", sent.key], ["id", sent.key, "--json"]):
        out = io.StringIO()
        call_command("email_log", *args, stdout=out)
        assert CODE not in out.getvalue(), args


def test_the_api_never_returns_it(aws, client):
    aws.load_samples()
    api = ApiClient(client, api_token_create(name="coded", emails_per_minute=0).plaintext)
    response = api.send({**BODY, "dedupeId": "code-1"})
    assert response.status_code == 200, response.content
    [result] = response.json()["results"]
    assert CODE not in response.content.decode()
    row = api.row(result["id"])
    assert row.status_code == 200 and CODE not in row.content.decode()
    assert row.json()["Subject"] == "Your code is ••••••"


def test_a_short_value_is_masked_only_under_its_key(sent):
    from templates_admin.display import mask_row

    masked = mask_row(
        replace(sent, subject="Room 42, code 981276"),
        container.current().config.console.sensitive_keys,
    )
    assert masked.context["pin"] == "••••••"
    assert masked.subject == "Room 42, code ••••••"
