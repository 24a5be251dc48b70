"""GET /api/v1/sends/{id}: one journal row this token wrote, the manifest's variables only (masked
as the console masks them), and audited."""

from __future__ import annotations

import pytest

from templates_admin.models import JournalReadAudit
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
