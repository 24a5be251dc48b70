"""JournalSearch against moto: paging, filters, case handling, date ranges, SES ids, missing GSIs."""

from __future__ import annotations

import pytest

from emailops import container
from emailops.aws.journal_search import JournalCriteria, JournalSearch
from emailops.aws.provision import _index
from emailops.core.journal_row import JournalRow
from tests.journal_factory import BASE_TIME, journal_row, put_rows


@pytest.fixture
def dynamo_calls(aws):
    """Every DynamoDB call made through the shared client, as (operation, params)."""
    calls: list[tuple[str, dict]] = []

    def record(params, model, **kwargs):
        calls.append((model.name, dict(params)))

    aws.dynamodb.meta.events.register("provide-client-params.dynamodb", record)
    yield calls
    aws.dynamodb.meta.events.unregister("provide-client-params.dynamodb", record)
    assert "Scan" not in {name for name, _ in calls}, "a search path scanned the table"


def queries(calls) -> list[dict]:
    return [params for name, params in calls if name == "Query"]


EVERYTHING = JournalCriteria()


def read_all(search, recipient, criteria=EVERYTHING, **kwargs):
    """Follow `next` to the end; returns the pages."""
    pages = [search.recipient_page(recipient, criteria, **kwargs)]
    while pages[-1].next:
        pages.append(search.recipient_page(recipient, criteria, position=pages[-1].next, **kwargs))
        assert len(pages) < 100
    return pages


def ids(rows) -> list[str]:
    """Keys of JournalRows (what the search returns) or of raw rows (what the test wrote)."""
    return [row.key if isinstance(row, JournalRow) else row["Id"] for row in rows]


def test_unfiltered_pages_are_one_query_each_newest_first(aws, dynamo_calls):
    rows = [journal_row("bob@example.com", at=BASE_TIME + i) for i in range(120)]
    put_rows(aws.dynamodb, "email-journal", rows)
    search = container.current().journal_search
    dynamo_calls.clear()

    first = search.recipient_page("bob@example.com", JournalCriteria())

    assert len(first.rows) == 50
    assert [r.timestamp for r in first.rows] == list(range(BASE_TIME + 119, BASE_TIME + 69, -1))
    assert len(queries(dynamo_calls)) == 1 and first.calls == 1
    assert queries(dynamo_calls)[0]["IndexName"] == "RecipientKeySentAtIndex"
    assert first.previous is None and first.next is not None

    pages = [first, *read_all(search, "bob@example.com")[1:]]
    assert [len(p.rows) for p in pages] == [50, 50, 20]
    seen = [row for page in pages for row in page.rows]
    assert ids(seen) == ids(sorted(rows, key=lambda r: -r["Timestamp"]))
    assert pages[1].calls == 1


def test_going_back_returns_the_same_pages(aws):
    put_rows(
        aws.dynamodb,
        "email-journal",
        [journal_row("bob@x.org", at=BASE_TIME + i) for i in range(120)],
    )
    search = container.current().journal_search
    forward = read_all(search, "bob@x.org")

    back_to_second = search.recipient_page(
        "bob@x.org", JournalCriteria(), position=forward[2].previous
    )
    back_to_first = search.recipient_page(
        "bob@x.org", JournalCriteria(), position=back_to_second.previous
    )

    assert ids(back_to_second.rows) == ids(forward[1].rows)
    assert ids(back_to_first.rows) == ids(forward[0].rows)
    assert back_to_first.previous is None  # the first page: nothing newer
    again = search.recipient_page("bob@x.org", JournalCriteria(), position=back_to_first.next)
    assert ids(again.rows) == ids(forward[1].rows)


def test_message_id_and_status_filters(aws, dynamo_calls):
    rows = [
        journal_row(
            "ann@example.com",
            at=BASE_TIME + i,
            message_id="dataset-publication-accepted" if i % 10 == 0 else "added-to-team",
            status="FAILED" if i % 20 == 0 else "SENT",
        )
        for i in range(600)
    ]
    put_rows(aws.dynamodb, "email-journal", rows)
    search = container.current().journal_search
    criteria = JournalCriteria(message_id="dataset-publication-accepted")
    dynamo_calls.clear()

    pages = read_all(search, "ann@example.com", criteria)

    found = [row for page in pages for row in page.rows]
    assert len(found) == 60 and {r.message_id for r in found} == {criteria.message_id}
    assert len(pages[0].rows) == 50 and pages[0].calls <= search.max_calls
    first_query = queries(dynamo_calls)[0]
    assert "MessageId" in first_query["ExpressionAttributeNames"].values()
    assert "FilterExpression" in first_query

    failed = read_all(search, "ann@example.com", JournalCriteria(status="FAILED"))
    assert {r.status for p in failed for r in p.rows} == {"FAILED"}
    assert sum(len(p.rows) for p in failed) == 30


def test_a_page_stops_at_its_read_budget_and_goes_on_from_there(aws, dynamo_calls):
    rows = [
        journal_row(
            "rare@example.com", at=BASE_TIME + i, message_id="rare" if i < 3 else "added-to-team"
        )
        for i in range(500)
    ]
    put_rows(aws.dynamodb, "email-journal", rows)
    search = JournalSearch(aws.dynamodb, "email-journal", max_calls=2, max_scanned=100)

    pages = read_all(search, "rare@example.com", JournalCriteria(message_id="rare"))

    assert pages[0].partial and pages[0].rows == [] and pages[0].next is not None
    assert all(page.calls <= 2 and page.scanned <= 100 for page in pages)
    assert sorted(ids(r for p in pages for r in p.rows)) == sorted(ids(rows[:3]))
    assert len(pages) >= 5  # 500 rows at 100 a page


def test_any_capitalisation_finds_rows_the_new_consumer_wrote(aws):
    put_rows(aws.dynamodb, "email-journal", [journal_row("Alice@Example.COM", at=BASE_TIME)])

    page = container.current().journal_search.recipient_page("aLiCe@example.com", JournalCriteria())

    assert [r.recipient for r in page.rows] == ["Alice@Example.COM"]


def test_go_rows_found_by_exact_then_lowercased_address_without_duplicates(aws, dynamo_calls):
    new = [journal_row("BOB@example.com", at=BASE_TIME + 100 + i) for i in range(3)]
    go_exact = [
        journal_row("Bob@Example.com", at=BASE_TIME + 50 + i, go_row=True) for i in range(2)
    ]
    go_lower = [journal_row("bob@example.com", at=BASE_TIME + i, go_row=True) for i in range(2)]
    put_rows(aws.dynamodb, "email-journal", new + go_exact + go_lower)
    search = container.current().journal_search
    dynamo_calls.clear()

    page = search.recipient_page("Bob@Example.com", JournalCriteria())

    expected = [*new[::-1], *go_exact[::-1], *go_lower[::-1]]
    assert ids(page.rows) == ids(expected)
    assert [
        (q["IndexName"], q["ExpressionAttributeValues"][":h"]["S"]) for q in queries(dynamo_calls)
    ] == [
        ("RecipientKeySentAtIndex", "bob@example.com"),
        ("RecipientSentAtIndex", "Bob@Example.com"),
        ("RecipientSentAtIndex", "bob@example.com"),
    ]
    oldest_first = search.recipient_page("Bob@Example.com", JournalCriteria(), newest_first=False)
    assert ids(oldest_first.rows) == ids(expected[::-1])
    # Typed in lower case, a Go row stored in another case cannot be found without a Scan.
    lower = search.recipient_page("bob@example.com", JournalCriteria())
    assert ids(lower.rows) == ids([*new[::-1], *go_lower[::-1]])


def test_an_address_finds_the_rows_of_every_spelling_of_its_mailbox(aws, dynamo_calls):
    # As the consumer writes them (tests/aws/test_journal.py): RecipientKey is the address_key.
    quoted = journal_row('"Dana"@Example.com', at=BASE_TIME + 2)
    named = journal_row("Dana <dana@example.com>", at=BASE_TIME + 1, status="FAILED")
    # Written before RecipientKey was the address_key: the spelling, lowercased.
    legacy = journal_row('"dana"@example.com', at=BASE_TIME, RecipientKey='"dana"@example.com')
    put_rows(aws.dynamodb, "email-journal", [quoted, named, legacy])
    search = container.current().journal_search

    assert ids(search.recipient_page("DANA@example.com", EVERYTHING).rows) == ids([quoted, named])
    typed_quoted = search.recipient_page('"dana"@example.com', EVERYTHING)
    assert ids(typed_quoted.rows) == ids([quoted, named, legacy])


def test_date_range_is_a_key_condition(aws, dynamo_calls):
    day = 86400
    rows = [journal_row("dee@example.com", at=BASE_TIME + d * day) for d in range(10)]
    put_rows(aws.dynamodb, "email-journal", rows)
    dynamo_calls.clear()

    page = container.current().journal_search.recipient_page(
        "dee@example.com", JournalCriteria(since=BASE_TIME + 3 * day, until=BASE_TIME + 5 * day)
    )

    assert ids(page.rows) == ids(rows[5:2:-1])
    first = queries(dynamo_calls)[0]
    assert "#sk BETWEEN :from AND :to" in first["KeyConditionExpression"]
    assert first["ExpressionAttributeValues"][":from"] == {"S": f"{BASE_TIME + 3 * day:020d}"}
    assert "FilterExpression" not in first
    assert "SentAtKey BETWEEN" in page.runs[0].describe()


def test_lookup_by_ses_message_id(aws):
    row = journal_row("eve@example.com", at=BASE_TIME, SesMessageId="0100018c-ses-id")
    put_rows(aws.dynamodb, "email-journal", [row, journal_row("eve@example.com", at=BASE_TIME + 1)])

    page = container.current().journal_search.by_ses_message_id("0100018c-ses-id")

    assert ids(page.rows) == [row["Id"]]
    assert page.runs[0].index == "SesMessageIdIndex" and not page.problems


@pytest.fixture
def go_table(aws):
    """The Go service's journal: only RecipientSentAtIndex."""
    aws.dynamodb.create_table(
        TableName="go-journal",
        KeySchema=[{"AttributeName": "Id", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": name, "AttributeType": "S"}
            for name in ("Id", "Recipient", "SentAtKey")
        ],
        GlobalSecondaryIndexes=[_index("RecipientSentAtIndex", "Recipient", "SentAtKey")],
        BillingMode="PAY_PER_REQUEST",
    )
    return JournalSearch(aws.dynamodb, "go-journal")


def test_without_the_newer_indexes_search_falls_back_and_says_so(aws, go_table):
    rows = [
        journal_row("Carol@Example.com", at=BASE_TIME, go_row=True),
        journal_row("carol@example.com", at=BASE_TIME + 1),
    ]
    put_rows(aws.dynamodb, "go-journal", rows)

    page = go_table.recipient_page("Carol@Example.com", JournalCriteria())

    assert ids(page.rows) == [rows[0]["Id"], rows[1]["Id"]]  # exact first, then lowercased
    assert any("RecipientKeySentAtIndex" in p and "bootstrap_aws" in p for p in page.problems)
    assert {run.index for run in page.runs} == {"RecipientSentAtIndex"}
    # The next page keeps to the same plan.
    small = go_table.recipient_page("Carol@Example.com", JournalCriteria(), limit=1)
    rest = go_table.recipient_page("Carol@Example.com", JournalCriteria(), position=small.next)
    assert ids(small.rows + rest.rows) == ids(page.rows)

    ses = go_table.by_ses_message_id("0100018c-ses-id")
    assert ses.rows == [] and "no index SesMessageIdIndex" in ses.problems[0]


def test_the_go_cutover_bounds_the_search_for_go_rows(aws, dynamo_calls):
    cutover = BASE_TIME + 1000
    go = [journal_row("ida@example.com", at=BASE_TIME + i, go_row=True) for i in range(3)]
    new = [journal_row("ida@example.com", at=cutover + 1 + i) for i in range(200)]
    put_rows(aws.dynamodb, "email-journal", go + new)
    unbounded = JournalSearch(aws.dynamodb, "email-journal")
    bounded = JournalSearch(aws.dynamodb, "email-journal", go_rows_until=cutover)

    slow = unbounded.recipient_page("ida@example.com", EVERYTHING, newest_first=False)
    fast = bounded.recipient_page("ida@example.com", EVERYTHING, newest_first=False)

    assert ids(fast.rows) == ids(slow.rows) == ids(go + new[:47])
    assert fast.runs[0].scanned == 3 and slow.runs[0].scanned == 203
    assert "SentAtKey BETWEEN" in fast.runs[0].key_condition
    dynamo_calls.clear()
    after = bounded.recipient_page("ida@example.com", JournalCriteria(since=cutover + 191))
    assert ids(after.rows) == ids(new[:189:-1])
    assert {q["IndexName"] for q in queries(dynamo_calls)} == {"RecipientKeySentAtIndex"}
    assert "Go consumer's last row" in after.runs[1].problem  # not queried: nothing to find


def test_the_go_cutover_setting_is_read_once_and_checked(aws, settings):
    from django.core.exceptions import ImproperlyConfigured

    settings.JOURNAL_GO_CUTOVER = "2026-05-28"
    container.reset()
    assert container.current().journal_search.go_rows_until == 1_779_926_400  # midnight UTC

    settings.JOURNAL_GO_CUTOVER = "last tuesday"
    container.reset()
    with pytest.raises(ImproperlyConfigured, match="JOURNAL_GO_CUTOVER"):
        _ = container.current().journal_search
