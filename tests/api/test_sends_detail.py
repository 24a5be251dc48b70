"""GET /api/v1/sends/{id}: one journal row this token wrote, the manifest's variables only (masked
as the console masks them), and audited."""

from __future__ import annotations

import pytest

from audit.models import JournalReadAudit
from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = pytest.mark.django_db

ROW = journal_row(
    "pat@example.com",
    at=BASE_TIME,
    key="evt-1/a:pat@example.com",  # a slash: ids are taken whole from the path
    Context={
        "teamName": "Curators",
        "resetLink": "https://x.test/r/s3cr3t",
        "nested": {"apiKey": "k"},
    },
)


def test_a_row_is_returned_with_only_declared_context(aws, api_client, token):
    put_rows(aws.dynamodb, "email-journal", [ROW | {"Producer": token.token.namespace}])

    response = api_client.row(ROW["Id"])

    assert response.status_code == 200
    row = response.json()
    assert row["Id"] == ROW["Id"] and row["Status"] == "SENT"
    assert row["SesMessageId"] == ROW["SesMessageId"] and row["Timestamp"] == BASE_TIME
    assert row["Context"] == {"teamName": "Curators"}  # added-to-team declares no resetLink
    assert b"s3cr3t" not in response.content
    audit = JournalReadAudit.objects.get()
    assert (audit.channel, audit.action, audit.query) == ("api", "get", ROW["Id"])
    assert audit.token_prefix == token.token.prefix and audit.actor.startswith(
        "token test-producer (eo_"
    )


def test_an_unknown_id_is_a_404(aws, api_client):
    response = api_client.row("nothing-here:pat@example.com")

    assert response.status_code == 404
    assert "nothing-here" in response.json()["error"]


def test_reading_needs_a_token(aws, client):
    put_rows(aws.dynamodb, "email-journal", [ROW])

    assert client.get(f"/api/v1/sends/{ROW['Id']}").status_code == 401
    assert not JournalReadAudit.objects.exists()


def test_a_row_carries_the_consoles_reading_of_it(aws, api_client, token):
    """Beside the attributes, the API reads the row as the console does: its state, and the
    failure's kind and permanence as recorded, worded by journal_words."""
    mine = {"Producer": token.token.namespace}
    failed = journal_row("ann@example.com", at=BASE_TIME, status="FAILED", key="f:ann") | mine | {
        "Error": "SES refused it", "ErrorKind": "SendRejected", "Permanent": True
    }  # fmt: skip
    bounced = journal_row("bo@example.com", at=BASE_TIME, key="b:bo") | mine | {
        "DeliveryStatus": "BOUNCED", "BounceType": "Permanent", "BounceSubType": "NoEmail"
    }  # fmt: skip
    put_rows(aws.dynamodb, "email-journal", [failed, bounced])

    failure = api_client.row("f:ann").json()
    delivery = api_client.row("b:bo").json()

    assert failure["state"] == "failed" and not failure["stuck"] and failure["delivery"] is None
    assert failure["failure"] == {
        "kind": "SendRejected",
        "permanent": True,
        "text": "Failed permanently: SES refused it",
    }
    assert delivery["state"] == "bounced" and delivery["failure"] is None
    assert delivery["delivery"] == {
        "state": "bounced",
        "text": "bounced: address does not exist",
        "bounce": "Permanent/NoEmail",
        "diagnostic": None,
    }
    assert delivery["DeliveryStatus"] == "BOUNCED"  # the attributes too, as stored
