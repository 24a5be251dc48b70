"""CSV export of a journal search: same filters and permission as the search, streamed, capped."""

from __future__ import annotations

import csv
import io

import pytest

from emailops import container
from templates_admin.journal import selectors
from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = pytest.mark.django_db

EXPORT = "/admin/templates_admin/emailjournalpage/export.csv"
SEARCH = "/admin/templates_admin/emailjournalpage/"


@pytest.fixture
def rows(aws):
    rows = [
        journal_row(
            "Joe@Example.com",
            at=BASE_TIME + i,
            status="FAILED" if i == 0 else "SENT",
            Context={"resetToken": "hunter2"},
            **({"Error": "send email [joe@example.com]: MessageRejected: no"} if i == 0 else {}),
        )
        for i in range(12)
    ]
    rows[3] |= {
        "DeliveryStatus": "BOUNCED",
        "BounceType": "Permanent",
        "BounceSubType": "NoEmail",
        "DeliveryStatusAt": "2026-05-28T20:40:00.000Z",
        "Subject": '=HYPERLINK("http://evil.example")',
    }
    put_rows(aws.dynamodb, "email-journal", rows)
    return rows


def read_csv(response) -> list[list[str]]:
    body = b"".join(response.streaming_content).decode()
    return list(csv.reader(io.StringIO(body)))


def test_support_exports_every_row_of_a_search_as_a_streamed_csv(rows, client, make_user):
    client.force_login(make_user("Support"))
    response = client.get(EXPORT, {"q": "joe@example.com"})

    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="journal-joe-example')
    header, *lines = read_csv(response)
    assert header[:5] == ["Time (UTC)", "Recipient", "messageId", "Status", "Delivery"]
    assert [line[-1] for line in lines] == [r["Id"] for r in reversed(rows)]  # newest first
    bounced = next(line for line in lines if line[-1] == rows[3]["Id"])
    assert bounced[4] == "bounced: address does not exist"
    assert bounced[6] == "Permanent/NoEmail"
    assert bounced[8].startswith("'=HYPERLINK")  # never a formula in a spreadsheet
    assert lines[-1][3] == "FAILED" and "MessageRejected" in lines[-1][10]
    assert lines[0][4] == "accepted by SES, no delivery report yet"
    assert "hunter2" not in str(lines)


def test_the_export_uses_the_searchs_filters(rows, client, make_user):
    client.force_login(make_user("Support"))
    failed = read_csv(client.get(EXPORT, {"q": "joe@example.com", "status": "FAILED"}))
    bounced = read_csv(client.get(EXPORT, {"q": "joe@example.com", "delivery": "BOUNCED"}))
    assert [line[-1] for line in failed[1:]] == [rows[0]["Id"]]
    assert [line[-1] for line in bounced[1:]] == [rows[3]["Id"]]


def test_the_export_stops_at_its_cap_and_says_so_in_the_file(rows, client, make_user, monkeypatch):
    monkeypatch.setattr(selectors, "EXPORT_MAX_ROWS", 5)
    client.force_login(make_user("Support"))

    header, *lines = read_csv(client.get(EXPORT, {"q": "joe@example.com"}))

    assert len(lines) == 6 and all(len(line) == len(header) for line in lines[:5])
    assert lines[-1][0].startswith("# stopped at 5 rows, the export's limit")


def test_the_search_page_links_to_the_export_with_its_filters(rows, client, make_user):
    client.force_login(make_user("Support"))
    page = client.get(SEARCH, {"q": "joe@example.com", "status": "SENT"}).content.decode()
    assert f'href="{EXPORT}?q=joe%40example.com&amp;status=SENT"' in page
    assert "up to 100000 rows" in page


def test_an_export_without_a_search_goes_back_to_the_search_page(rows, client, make_user):
    client.force_login(make_user("Support"))
    response = client.get(EXPORT, {"q": "joe@example.com", "delivery": "LOST"})
    assert response.status_code == 302 and response["Location"].startswith(SEARCH)


def test_the_export_needs_the_search_permission(rows, client, make_user):
    assert client.get(EXPORT, {"q": "joe@example.com"}).status_code == 302  # to the login
    client.force_login(make_user(None))
    assert client.get(EXPORT, {"q": "joe@example.com"}).status_code == 403


def test_a_read_failure_part_way_is_written_into_the_file(rows):
    from emailops.core.errors import TransientError
    from templates_admin.journal.csv_export import csv_lines

    first = selectors.journal_search(adapters=container.current(), query="joe@example.com", limit=4)

    def pages():
        yield first
        raise TransientError("search journal", key="joe@example.com", reason="throttled")

    lines = list(csv.reader(io.StringIO("".join(csv_lines(pages(), max_rows=100)))))

    assert len(lines) == 1 + 4 + 1
    assert lines[-1] == [
        "# export stopped after 4 rows: the journal could not be read: "
        "search journal [joe@example.com]: throttled"
    ]


def test_the_export_is_audited_with_its_filters_and_row_count(rows, client, make_user):
    from audit.models import JournalReadAudit

    client.force_login(make_user("Support"))
    response = client.get(EXPORT, {"q": "joe@example.com", "status": "SENT"})
    assert JournalReadAudit.objects.filter(action="export").count() == 1  # before any byte left
    lines = read_csv(response)

    audit = JournalReadAudit.objects.get(action="export")
    assert (audit.channel, audit.actor, audit.query) == ("console", "support", "joe@example.com")
    assert audit.filters["status"] == "SENT"
    assert audit.rows == len(lines) - 1 == 11
