"""GET /api/v1/sends/{id} on a row with every attribute set answers exactly the golden response
(tests/api/golden_send_row.json, recorded before the response was declared field by field): the
wire names and values stay what producers already read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = pytest.mark.django_db

GOLDEN = Path(__file__).with_name("golden_send_rows.json")


def rich_row(producer: str) -> dict:
    """Every attribute the journal's writers store, a sensitive value copied into the texts."""
    return journal_row(
        "pat@example.com",
        at=BASE_TIME,
        key="api:golden:pat@example.com",
        Context={"teamName": "Curators", "resetCode": "981276"},
        Subject="Your code is 981276",
        TemplateVersion="v7",
        Producer=producer,
        DedupeId="golden",
        ContextTrimmed=2048,
        Error="an earlier try failed with 981276",
        ErrorKind="SendRejected",
        Permanent=False,
        LoggedOnly=True,
        LoggedOnlyReason="SEND_CONTROL",
        LoggedOnlyDetail="held for 981276",
        DeliveryStatus="BOUNCED",
        DeliveryStatusAt="2026-05-28T20:30:00Z",
        BounceType="Permanent",
        BounceSubType="NoEmail",
        DiagnosticCode="550 5.1.1 no mailbox (code 981276)",
        BounceStatusCode="5.1.1",
        ComplaintType="abuse",
        DeliveryOrder=300001780000000000,
        DeliveryEventCount=2,
        DeliveryEvents=[
            {"Type": "Delivery", "At": "2026-05-28T20:29:00Z", "Id": "e1", "Summary": "ok"},
            {"Type": "Bounce", "At": "2026-05-28T20:30:00Z", "Id": "e2", "Summary": "981276 gone"},
        ],
        ExtraSends=[{"SesMessageId": "ses-extra", "Attempt": 2, "At": "2026-05-28T20:28:00Z"}],
    )


def go_row(producer: str) -> dict:
    """The fewest attributes: the Go consumer's row (what it does not store is not answered)."""
    return journal_row("go@example.com", at=BASE_TIME, key="api:go:go@example.com", go_row=True) | {
        "Producer": producer
    }


def golden(name: str, producer: str) -> dict:
    return json.loads(GOLDEN.read_text())[name] | {"Producer": producer}


def test_a_rich_row_answers_the_golden_response(aws, api_client, token):
    put_rows(aws.dynamodb, "email-journal", [rich_row(token.token.namespace)])

    response = api_client.row("api:golden:pat@example.com")

    assert response.status_code == 200
    assert response.json() == golden("rich", token.token.namespace)
    assert b"981276" not in response.content


def test_a_go_row_answers_only_what_it_stores(aws, api_client, token):
    put_rows(aws.dynamodb, "email-journal", [go_row(token.token.namespace)])

    response = api_client.row("api:go:go@example.com")

    assert response.status_code == 200
    assert response.json() == golden("go", token.token.namespace)
