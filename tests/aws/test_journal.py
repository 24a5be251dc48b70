"""DynamoJournal against moto: the claim rules live in conditional writes, and rows carry exactly the
attributes documented at the top of emailops/aws/journal.py (the Go consumer's plus ours)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from emailops import container
from emailops.aws.journal import DynamoJournal, from_dynamo, rfc3339, sent_at_key, to_dynamo
from emailops.core.errors import TransientError
from emailops.core.ports import Claim, ClaimState

NOW = 1_750_000_000
LEASE = 30
TTL = 90 * 86400
TABLE = "email-journal"

CONTEXT = {
    "datasetName": "My <Dataset>",
    "organizationId": 367,
    "ratio": 1.5,
    "tiny": 1e-7,
    "nested": {"list": [1, "x", None, True, {"deep": 2.25}], "empty": {}, "none": []},
    "big": 12345678901234567890123456789012345678901,  # 41 digits: more than DynamoDB's 38
    "huge": 1e300,  # beyond DynamoDB's 1e126
    "denormal": 5e-324,  # below DynamoDB's 1e-130
    "negative": -42,
    "text": "",
    "flag": False,
}


def claim(key="k1", *, now=NOW, recipient="Alice@Example.com", context=None, **kwargs) -> Claim:
    return Claim(
        key=key,
        message_id=kwargs.pop("message_id", "dataset-publication-accepted"),
        recipient=recipient,
        context=CONTEXT if context is None else context,
        now=now,
        lease_seconds=kwargs.pop("lease_seconds", LEASE),
        ttl_seconds=TTL,
        subject=kwargs.pop("subject", "Dataset accepted"),
        template_key=kwargs.pop("template_key", "default/dataset-publication-accepted.html"),
        producer=kwargs.pop("producer", ""),
    )


@pytest.fixture
def journal(aws) -> DynamoJournal:
    return container.current().journal


def raw(aws, key: str) -> dict:
    return aws.dynamodb.get_item(TableName=TABLE, Key={"Id": {"S": key}}, ConsistentRead=True).get(
        "Item", {}
    )


def put_go_row(aws, key: str, *, status: str, timestamp: int) -> None:
    """A row as the Go consumer writes it: no ClaimExpiresAt, no Attempts, no RecipientKey."""
    aws.dynamodb.put_item(
        TableName=TABLE,
        Item={
            "Id": {"S": key},
            "MessageId": {"S": "dataset-publication-accepted"},
            "Recipient": {"S": "alice@example.com"},
            "Status": {"S": status},
            "Timestamp": {"N": str(timestamp)},
            "SentAtKey": {"S": sent_at_key(timestamp)},
        },
    )


# --- claim --------------------------------------------------------------------------------------


def test_claim_on_no_row_writes_the_documented_attributes(aws, journal):
    result = journal.claim(claim())
    assert result.state is ClaimState.CLAIMED
    assert result.attempt == 1
    item = raw(aws, "k1")
    assert set(item) == {
        "Id",
        "MessageId",
        "Recipient",
        "RecipientKey",
        "Status",
        "Timestamp",
        "SentAtKey",
        "Context",
        "ExpiresAt",
        "ClaimExpiresAt",
        "Attempts",
        "Subject",
        "TemplateKey",
        "TemplateVersion",
    }
    assert item["Id"] == {"S": "k1"}
    assert item["MessageId"] == {"S": "dataset-publication-accepted"}
    assert item["Recipient"] == {"S": "Alice@Example.com"}
    assert item["RecipientKey"] == {"S": "alice@example.com"}
    assert item["Status"] == {"S": "QUEUED"}
    assert item["Timestamp"] == {"N": str(NOW)}
    assert item["SentAtKey"] == {"S": "00000000001750000000"}
    assert item["ExpiresAt"] == {"N": str(NOW + TTL)}
    assert item["ClaimExpiresAt"] == {"N": str(NOW + LEASE)}
    assert item["Attempts"] == {"N": "1"}
    assert item["Subject"] == {"S": "Dataset accepted"}
    assert item["TemplateKey"] == {"S": "default/dataset-publication-accepted.html"}
    assert "M" in item["Context"]


@pytest.mark.parametrize(
    "recipient",
    ['"Alice"@Example.com', "Alice <alice@EXAMPLE.com>", "alice@example.com"],
)
def test_recipient_key_is_the_address_key_of_any_spelling(aws, journal, recipient):
    # One Query on RecipientKey finds every row of the mailbox (the search, erasure).
    journal.claim(claim(recipient=recipient))
    item = raw(aws, "k1")
    assert (item["Recipient"]["S"], item["RecipientKey"]["S"]) == (recipient, "alice@example.com")


def test_context_is_stored_as_a_map_with_numbers_dynamodb_can_hold(aws, journal):
    journal.claim(claim())
    context = raw(aws, "k1")["Context"]["M"]
    assert context["organizationId"] == {"N": "367"}
    assert context["ratio"] == {"N": "1.5"}
    assert context["datasetName"] == {"S": "My <Dataset>"}
    assert context["nested"]["M"]["list"]["L"][4] == {"M": {"deep": {"N": "2.25"}}}
    assert context["nested"]["M"]["list"]["L"][2] == {"NULL": True}
    assert context["nested"]["M"]["empty"] == {"M": {}}
    assert context["huge"] == {"S": "1e+300"}  # out of DynamoDB's range: kept as text
    assert context["denormal"] == {"S": "5e-324"}
    assert Decimal(context["big"]["N"]) == Decimal("1.2345678901234568e40")  # float64, as Go
    assert context["flag"] == {"BOOL": False}

    row = journal.get("k1")
    stored = row["Context"]
    assert stored["ratio"] == 1.5
    assert stored["tiny"] == 1e-7
    assert stored["organizationId"] == 367
    assert stored["nested"] == {
        "list": [1, "x", None, True, {"deep": 2.25}],
        "empty": {},
        "none": [],
    }
    assert stored["big"] == pytest.approx(1.2345678901234568e40)
    assert stored["huge"] == "1e+300"
    assert stored["negative"] == -42
    assert stored["text"] == ""


def test_claim_on_a_sent_row_is_already_sent(aws, journal):
    first = journal.claim(claim())
    assert journal.mark_sent("k1", attempt=first.attempt, provider_id="ses-1", sent_at=NOW + 1)
    before = raw(aws, "k1")
    result = journal.claim(claim(now=NOW + 1000))
    assert result.state is ClaimState.ALREADY_SENT
    assert raw(aws, "k1") == before


def test_claim_on_a_failed_row_takes_it_and_clears_the_last_attempt(aws, journal):
    journal.claim(claim())
    assert journal.mark_failed("k1", attempt=1, error="send email: Throttling")
    result = journal.claim(claim(now=NOW + 5))
    assert (result.state, result.attempt) == (ClaimState.CLAIMED, 2)
    item = raw(aws, "k1")
    assert item["Status"] == {"S": "QUEUED"}
    assert "Error" not in item
    assert item["Timestamp"] == {"N": str(NOW + 5)}
    assert item["ClaimExpiresAt"] == {"N": str(NOW + 5 + LEASE)}


def test_claim_on_a_live_claim_is_in_progress_until_its_lease_ends(aws, journal):
    journal.claim(claim())
    before = raw(aws, "k1")
    for now in (NOW, NOW + 10, NOW + LEASE):  # the lease ends *after* NOW + LEASE
        result = journal.claim(claim(now=now))
        assert result.state is ClaimState.IN_PROGRESS
        assert result.lease_ends_at == NOW + LEASE
    assert raw(aws, "k1") == before


def test_claim_on_an_expired_claim_takes_it_over(aws, journal):
    journal.claim(claim())
    result = journal.claim(claim(now=NOW + LEASE + 1))
    assert (result.state, result.attempt) == (ClaimState.CLAIMED, 2)
    # The first claimant has lost it: its marks are refused.
    assert not journal.mark_sent("k1", attempt=1, provider_id="ses-late", sent_at=NOW + 40)
    assert not journal.mark_failed("k1", attempt=1, error="late")
    assert journal.mark_sent("k1", attempt=2, provider_id="ses-2", sent_at=NOW + 40)
    assert raw(aws, "k1")["SesMessageId"] == {"S": "ses-2"}


def test_go_written_queued_row_within_its_lease(aws, journal):
    put_go_row(aws, "go", status="QUEUED", timestamp=NOW - 10)
    result = journal.claim(claim("go"))
    assert result.state is ClaimState.IN_PROGRESS
    assert result.lease_ends_at == NOW - 10 + LEASE
    assert "Attempts" not in raw(aws, "go")


def test_go_written_queued_row_past_its_lease_is_taken(aws, journal):
    put_go_row(aws, "go", status="QUEUED", timestamp=NOW - LEASE - 1)
    result = journal.claim(claim("go"))
    assert (result.state, result.attempt) == (ClaimState.CLAIMED, 1)
    item = raw(aws, "go")
    assert item["Status"] == {"S": "QUEUED"}
    assert item["RecipientKey"] == {"S": "alice@example.com"}
    assert item["ClaimExpiresAt"] == {"N": str(NOW + LEASE)}


def test_go_written_sent_and_failed_rows(aws, journal):
    put_go_row(aws, "sent", status="SENT", timestamp=NOW - 5)
    put_go_row(aws, "failed", status="FAILED", timestamp=NOW - 5)
    assert journal.claim(claim("sent")).state is ClaimState.ALREADY_SENT
    assert journal.claim(claim("failed")).state is ClaimState.CLAIMED


def test_only_one_of_two_racing_claims_wins(journal):
    results = [journal.claim(claim("race")), journal.claim(claim("race"))]
    assert [r.state for r in results] == [ClaimState.CLAIMED, ClaimState.IN_PROGRESS]


# --- mark_sent / mark_failed ------------------------------------------------------------------


def test_mark_sent(aws, journal):
    journal.claim(claim())
    assert journal.mark_sent("k1", attempt=1, provider_id="0100-ses-id", sent_at=NOW + 2)
    item = raw(aws, "k1")
    assert item["Status"] == {"S": "SENT"}
    assert item["SesMessageId"] == {"S": "0100-ses-id"}
    assert item["MessageSent"] == {"S": "2025-06-15T15:06:42Z"}
    assert item["Attempts"] == {"N": "1"}
    # A second mark (e.g. a duplicate) is refused: the row is no longer QUEUED.
    assert not journal.mark_sent("k1", attempt=1, provider_id="other", sent_at=NOW + 3)
    assert raw(aws, "k1")["SesMessageId"] == {"S": "0100-ses-id"}


def test_mark_failed(aws, journal):
    journal.claim(claim())
    assert journal.mark_failed("k1", attempt=1, error="send email [a@x.com]: MessageRejected")
    item = raw(aws, "k1")
    assert item["Status"] == {"S": "FAILED"}
    assert item["Error"] == {"S": "send email [a@x.com]: MessageRejected"}
    assert "SesMessageId" not in item and "MessageSent" not in item


def test_marks_need_our_attempt_and_a_row(aws, journal):
    assert not journal.mark_sent("nothing", attempt=1, provider_id="x", sent_at=NOW)
    assert not journal.mark_failed("nothing", attempt=1, error="x")
    assert raw(aws, "nothing") == {}  # no row conjured up
    journal.claim(claim())
    assert not journal.mark_sent("k1", attempt=2, provider_id="x", sent_at=NOW)
    assert not journal.mark_failed("k1", attempt=0, error="x")
    assert raw(aws, "k1")["Status"] == {"S": "QUEUED"}


def test_marks_on_a_go_row_without_attempts_are_refused(aws, journal):
    put_go_row(aws, "go", status="QUEUED", timestamp=NOW)
    assert not journal.mark_sent("go", attempt=0, provider_id="x", sent_at=NOW)
    assert not journal.mark_sent("go", attempt=1, provider_id="x", sent_at=NOW)


# --- record_failure -------------------------------------------------------------------------------


def test_record_failure_on_no_row(aws, journal):
    assert journal.record_failure(claim(subject="", template_key=""), error="no such messageId")
    item = raw(aws, "k1")
    assert item["Status"] == {"S": "FAILED"}
    assert item["Error"] == {"S": "no such messageId"}
    assert item["RecipientKey"] == {"S": "alice@example.com"}
    assert item["SentAtKey"] == {"S": sent_at_key(NOW)}
    assert item["ExpiresAt"] == {"N": str(NOW + TTL)}
    assert "ClaimExpiresAt" not in item and "Attempts" not in item


def test_record_failure_never_overwrites_sent(aws, journal):
    journal.claim(claim())
    journal.mark_sent("k1", attempt=1, provider_id="ses-1", sent_at=NOW)
    before = raw(aws, "k1")
    assert not journal.record_failure(claim(now=NOW + 100), error="later failure")
    assert raw(aws, "k1") == before


def test_record_failure_leaves_a_live_claim_alone_but_takes_an_expired_one(aws, journal):
    journal.claim(claim())
    assert not journal.record_failure(claim(now=NOW + 1), error="x")
    assert raw(aws, "k1")["Status"] == {"S": "QUEUED"}
    assert journal.record_failure(claim(now=NOW + LEASE + 1), error="x")
    assert raw(aws, "k1")["Status"] == {"S": "FAILED"}


def test_record_failure_replaces_a_failed_row(aws, journal):
    assert journal.record_failure(claim(), error="first")
    assert journal.record_failure(claim(now=NOW + 1), error="second")
    assert raw(aws, "k1")["Error"] == {"S": "second"}


# --- get and errors ---------------------------------------------------------------------------------


def test_get(journal):
    assert journal.get("absent") is None
    journal.claim(claim())
    row = journal.get("k1")
    assert row["Id"] == "k1"
    assert row["Status"] == "QUEUED"
    assert row["Timestamp"] == NOW
    assert row["Attempts"] == 1
    assert isinstance(row["Timestamp"], int)


def test_a_missing_table_is_a_transient_error(aws):
    broken = DynamoJournal(aws.dynamodb, "no-such-table")
    with pytest.raises(TransientError) as info:
        broken.claim(claim())
    assert "ResourceNotFoundException" in info.value.reason
    with pytest.raises(TransientError):
        broken.get("k1")
    with pytest.raises(TransientError):
        broken.mark_sent("k1", attempt=1, provider_id="x", sent_at=NOW)


# --- helpers ----------------------------------------------------------------------------------------


def test_sent_at_key_and_rfc3339():
    assert sent_at_key(0) == "0" * 20
    assert sent_at_key(NOW) == "00000000001750000000"
    assert len(sent_at_key(10**19)) == 20
    assert sorted([sent_at_key(9), sent_at_key(10), sent_at_key(100)]) == [
        sent_at_key(9),
        sent_at_key(10),
        sent_at_key(100),
    ]
    assert rfc3339(0) == "1970-01-01T00:00:00Z"
    assert rfc3339(NOW) == "2025-06-15T15:06:40Z"


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        (1.5, Decimal("1.5")),
        (0.1, Decimal("0.1")),
        (367, Decimal(367)),
        (1e-7, Decimal("1e-7")),
        (1e300, "1e+300"),
        (-1e300, "-1e+300"),
        (5e-324, "5e-324"),
        (float("inf"), "inf"),
        (10**200, str(10**200)),
        (True, True),
        (None, None),
        ("s", "s"),
        ((1, 2), [Decimal(1), Decimal(2)]),
        ({1: "a"}, {"1": "a"}),
    ],
)
def test_to_dynamo(value, stored):
    assert to_dynamo(value) == stored


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        (Decimal("1.5"), 1.5),
        (Decimal("367"), 367),
        (Decimal("1E+2"), 100),
        ([Decimal("1"), {"a": Decimal("2.5")}], [1, {"a": 2.5}]),
        ({Decimal("2"), Decimal("1")}, [1, 2]),
        ("s", "s"),
    ],
)
def test_from_dynamo(value, plain):
    result = from_dynamo(value)
    assert result == plain
    assert type(result) is type(plain)


def test_a_context_stored_as_json_text_reads_back_as_a_map(aws, settings):
    aws.dynamodb.put_item(
        TableName=settings.JOURNAL_TABLE,
        Item={
            "Id": {"S": "k1"},
            "Status": {"S": "SENT"},
            "Context": {"S": '{"a": 1, "b": [true]}'},
        },
    )
    aws.dynamodb.put_item(
        TableName=settings.JOURNAL_TABLE,
        Item={"Id": {"S": "k2"}, "Status": {"S": "SENT"}, "Context": {"S": "not json"}},
    )
    assert container.current().journal.get("k1")["Context"] == {"a": 1, "b": [True]}
    assert container.current().journal.get("k2")["Context"] == "not json"


# --- what the consumer needs for slow sends, waits and the send→mark window ----------------------


def test_extend_claim_pushes_our_lease_and_refuses_anyone_elses(aws, journal):
    first = journal.claim(claim())
    assert journal.extend_claim("k1", attempt=first.attempt, until=NOW + 500)
    assert raw(aws, "k1")["ClaimExpiresAt"] == {"N": str(NOW + 500)}
    assert journal.claim(claim(now=NOW + LEASE + 5)).state is ClaimState.IN_PROGRESS
    assert not journal.extend_claim("k1", attempt=first.attempt + 1, until=NOW + 900)
    assert raw(aws, "k1")["ClaimExpiresAt"] == {"N": str(NOW + 500)}


def test_release_claim_leaves_the_row_queued_and_claimable_at_once(aws, journal):
    first = journal.claim(claim())
    assert journal.release_claim("k1", attempt=first.attempt)
    assert raw(aws, "k1")["Status"] == {"S": "QUEUED"}
    assert journal.claim(claim(now=NOW + 1)).state is ClaimState.CLAIMED


def test_mark_accepted_marks_sent_whoever_holds_the_row_but_never_rewrites_sent(aws, journal):
    journal.claim(claim())
    journal.claim(claim(now=NOW + LEASE + 1))  # someone took it over after our lease
    journal.mark_accepted("k1", provider_id="ses-early", sent_at=NOW + 2)
    item = raw(aws, "k1")
    assert (item["Status"], item["SesMessageId"]) == ({"S": "SENT"}, {"S": "ses-early"})
    journal.mark_accepted("k1", provider_id="ses-other", sent_at=NOW + 3)
    assert raw(aws, "k1")["SesMessageId"] == {"S": "ses-early"}


def test_a_suppressed_row_is_never_claimed(aws, journal):
    assert journal.record_suppressed(claim(), reason="hard bounce")
    assert journal.claim(claim(now=NOW + 10_000)).state is ClaimState.ALREADY_SENT
    assert raw(aws, "k1")["Status"] == {"S": "SUPPRESSED"}


def test_a_row_is_only_ever_claimed_or_recorded_by_its_own_producer(aws, journal):
    from emailops.core.errors import ForeignRow

    journal.claim(claim("shared", producer="api:1"))
    journal.mark_failed("shared", attempt=1, error="boom")  # FAILED: claimable, but not by others

    for other in ("api:2", ""):  # another token, and the queue path
        with pytest.raises(ForeignRow):
            journal.claim(claim("shared", producer=other))
        assert journal.record_failure(claim("shared", producer=other), error="x") is False
        assert journal.record_suppressed(claim("shared", producer=other), reason="x") is False
    assert journal.claim(claim("shared", producer="api:1")).state is ClaimState.CLAIMED
    assert journal.get("shared")["Producer"] == "api:1"


def test_an_extra_send_is_appended_to_the_row_and_never_changes_its_outcome(aws):
    journal = container.current().journal
    journal.claim(claim("k1"))
    journal.claim(claim("k1", now=NOW + 10 * LEASE))  # another consumer's claim: attempt 2
    assert journal.mark_sent("k1", attempt=2, provider_id="ses-theirs", sent_at=NOW + 301)
    journal.note_extra_send("k1", attempt=1, provider_id="ses-ours", sent_at=NOW + 302)
    journal.note_extra_send("k1", attempt=1, provider_id="ses-again", sent_at=NOW + 303)
    row = journal.get("k1")
    assert (row["Status"], row["SesMessageId"]) == ("SENT", "ses-theirs")
    assert [e["SesMessageId"] for e in row["ExtraSends"]] == ["ses-ours", "ses-again"]
    assert row["ExtraSends"][0] == {
        "SesMessageId": "ses-ours",
        "Attempt": 1,
        "At": "2025-06-15T15:11:42Z",
    }


def test_a_context_of_many_keys_is_bounded_too():
    from emailops.aws.journal import MAX_CONTEXT_BYTES, bounded_context

    context = {f"k{i}": "v" * 90 for i in range(20_000)}  # ~2 MB in 20,000 small values
    stored, size = bounded_context(context)
    assert size > 2_000_000
    assert len(json.dumps(stored).encode()) <= MAX_CONTEXT_BYTES
    assert stored["k0"] == "v" * 90 and stored["[trimmed]"].endswith("more keys")
    assert bounded_context({"a": 1}) == ({"a": 1}, 0)


def test_a_mark_sent_repeated_after_a_lost_reply_is_the_same_mark_not_a_lost_lease(aws, journal):
    journal.claim(claim("k1"))
    assert journal.mark_sent("k1", attempt=1, provider_id="ses-1", sent_at=NOW + 1)
    # botocore retried the call whose reply was lost: the write had landed, it is still ours
    assert journal.mark_sent("k1", attempt=1, provider_id="ses-1", sent_at=NOW + 2)
    assert not journal.mark_sent("k1", attempt=1, provider_id="ses-2", sent_at=NOW + 3)
    assert not journal.mark_sent("k1", attempt=2, provider_id="ses-1", sent_at=NOW + 3)
    assert journal.get("k1")["SesMessageId"] == "ses-1"


# --- failure facts on the row -------------------------------------------------------------------


def test_a_failure_is_written_with_its_kind_and_permanence(aws, journal):
    journal.record_failure(claim("f1"), error="render template [x]: bad", kind="TemplateError",
                           permanent=True)  # fmt: skip
    item = raw(aws, "f1")
    assert item["ErrorKind"] == {"S": "TemplateError"} and item["Permanent"] == {"BOOL": True}
    attempt = journal.claim(claim("f2")).attempt
    journal.mark_failed("f2", attempt=attempt, error="send email: x", kind="SendThrottled",
                        permanent=False)  # fmt: skip
    assert (
        journal.read("f2").permanent is False and journal.read("f2").error_kind == "SendThrottled"
    )


def test_a_new_claim_clears_the_last_attempts_failure_facts(aws, journal):
    journal.record_failure(claim("f3"), error="boom", kind="TemplateError", permanent=True)
    journal.claim(claim("f3", now=NOW + 1))
    item = raw(aws, "f3")
    assert "ErrorKind" not in item and "Permanent" not in item and "Error" not in item
