"""The journal's write contract (``emailops.core.ports.Journal``), run against both of its
implementations: the in-memory fake most pipeline and consumer tests use (tests/fakes.py) and
``DynamoJournal`` on moto. A case that passes on one and fails on the other is a fake that lies.

Rows are read back through ``stored()``, the one place that knows how each implementation is read.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from boto3.dynamodb.types import TypeSerializer

from emailops.aws.journal import DynamoJournal, to_dynamo
from emailops.core.errors import ForeignRow
from emailops.core.ports import Claim, ClaimState, Status
from tests.fakes import InMemoryJournal

NOW = 1_800_000_000
LEASE = 30
KEY = "dedupe-key-1"
# The facts a row holds that the contract is about; how each store spells the rest may differ.
FACTS = ("Status", "Attempts", "ClaimExpiresAt", "Error", "SesMessageId", "Producer")


def claim_at(now: int = NOW, *, key: str = KEY, producer: str = "") -> Claim:
    return Claim(
        key=key,
        message_id="welcome",
        recipient="Ada@Example.com",
        context={"name": "Ada"},
        now=now,
        lease_seconds=LEASE,
        ttl_seconds=86_400,
        subject="Hi",
        template_key="default/w.html",
        producer=producer,
    )


@pytest.fixture(params=["fake", "dynamo"])
def journal(request):
    if request.param == "fake":
        return InMemoryJournal()
    aws = request.getfixturevalue("aws")
    settings = request.getfixturevalue("settings")
    return DynamoJournal(aws.dynamodb, settings.JOURNAL_TABLE)


def row_of(journal, key: str = KEY) -> dict[str, Any] | None:
    """The whole row as each implementation reads it back."""
    return journal.rows.get(key) if isinstance(journal, InMemoryJournal) else journal.get(key)


def stored(journal, key: str = KEY) -> dict[str, Any] | None:
    """The row's contract facts, or None when there is no row."""
    row = row_of(journal, key)
    if row is None:
        return None
    return {name: row[name] for name in FACTS if name in row}


def seed(journal, **attributes: Any) -> None:
    """Put a row as another writer (the Go consumer, another producer) left it."""
    row = {"Id": KEY, "MessageId": "welcome", "Recipient": "ada@example.com", **attributes}
    if isinstance(journal, InMemoryJournal):
        journal.rows[KEY] = row
    else:
        item = {k: TypeSerializer().serialize(to_dynamo(v)) for k, v in row.items()}
        journal.client.put_item(TableName=journal.table, Item=item)


def claimed(journal, now: int = NOW) -> int:
    result = journal.claim(claim_at(now))
    assert result.state is ClaimState.CLAIMED
    return result.attempt


# --- claim ----------------------------------------------------------------------------------


def test_a_first_claim_takes_the_row_with_a_lease(journal):
    result = journal.claim(claim_at())

    assert (result.state, result.attempt) == (ClaimState.CLAIMED, 1)
    assert stored(journal) == {
        "Status": Status.QUEUED,
        "Attempts": 1,
        "ClaimExpiresAt": NOW + LEASE,
    }


@pytest.mark.parametrize("later", [0, 1, LEASE])  # the lease ends at NOW + LEASE, not before
def test_a_live_lease_is_in_progress_until_its_end(journal, later):
    claimed(journal)

    result = journal.claim(claim_at(NOW + later))

    assert (result.state, result.lease_ends_at) == (ClaimState.IN_PROGRESS, NOW + LEASE)
    assert stored(journal)["Attempts"] == 1


def test_an_ended_lease_is_taken_by_the_next_claim(journal):
    claimed(journal)

    assert claimed(journal, NOW + LEASE + 1) == 2
    assert stored(journal)["ClaimExpiresAt"] == NOW + 2 * LEASE + 1


@pytest.mark.parametrize(
    ("age", "state"), [(LEASE, ClaimState.IN_PROGRESS), (LEASE + 1, ClaimState.CLAIMED)]
)
def test_a_go_row_without_a_lease_ends_lease_seconds_after_its_timestamp(journal, age, state):
    seed(journal, Status="QUEUED", Timestamp=NOW - age)

    result = journal.claim(claim_at())

    assert result.state is state
    if state is ClaimState.IN_PROGRESS:
        assert result.lease_ends_at == NOW - age + LEASE


@pytest.mark.parametrize("status", [Status.SENT, Status.SUPPRESSED])
def test_a_sent_or_suppressed_row_is_never_claimed_again(journal, status):
    seed(journal, Status=status.value, Timestamp=NOW - 10 * LEASE, Attempts=1)

    assert journal.claim(claim_at()).state is ClaimState.ALREADY_SENT
    assert stored(journal)["Status"] == status


def test_a_failed_row_is_claimed_at_once_and_counts_the_attempt(journal):
    attempt = claimed(journal)
    journal.mark_failed(KEY, attempt=attempt, error="SES said no")

    assert claimed(journal, NOW + 1) == 2
    assert "Error" not in stored(journal)


def test_a_new_claim_keeps_the_sends_noted_under_lost_claims(journal):
    attempt = claimed(journal)
    journal.mark_failed(KEY, attempt=attempt, error="read timeout")
    journal.note_extra_send(KEY, attempt=attempt, provider_id="ses-1", sent_at=NOW + 1)

    claimed(journal, NOW + 2)

    assert [e["SesMessageId"] for e in row_of(journal)["ExtraSends"]] == ["ses-1"]


def test_a_claim_never_takes_another_producers_row(journal):
    journal.claim(claim_at(producer="api:1"))

    with pytest.raises(ForeignRow):
        journal.claim(claim_at(NOW + LEASE + 1, producer="api:2"))
    with pytest.raises(ForeignRow):
        journal.claim(claim_at(NOW + LEASE + 1))  # the queue path has no producer
    assert stored(journal)["Producer"] == "api:1"
    assert journal.claim(claim_at(NOW + LEASE + 1, producer="api:1")).attempt == 2


# --- marks under a claim --------------------------------------------------------------------


def test_mark_sent_under_our_claim_makes_the_row_sent(journal):
    attempt = claimed(journal)

    assert journal.mark_sent(KEY, attempt=attempt, provider_id="ses-1", sent_at=NOW + 1)

    assert stored(journal) | {"ClaimExpiresAt": 0} == {
        "Status": Status.SENT,
        "Attempts": 1,
        "SesMessageId": "ses-1",
        "ClaimExpiresAt": 0,
    }
    assert journal.claim(claim_at(NOW + LEASE + 1)).state is ClaimState.ALREADY_SENT


def test_mark_sent_repeated_with_the_same_send_is_the_same_mark(journal):
    """A retried call whose first reply was lost: the write landed, the retry is not a lost
    lease."""
    attempt = claimed(journal)
    journal.mark_sent(KEY, attempt=attempt, provider_id="ses-1", sent_at=NOW + 1)

    assert journal.mark_sent(KEY, attempt=attempt, provider_id="ses-1", sent_at=NOW + 1)
    assert not journal.mark_sent(KEY, attempt=attempt, provider_id="ses-2", sent_at=NOW + 2)
    assert stored(journal)["SesMessageId"] == "ses-1"


@pytest.mark.parametrize(
    "mark",
    [
        lambda j, a: j.mark_sent(KEY, attempt=a, provider_id="ses-1", sent_at=NOW),
        lambda j, a: j.mark_failed(KEY, attempt=a, error="late"),
        lambda j, a: j.extend_claim(KEY, attempt=a, until=NOW + 999),
        lambda j, a: j.release_claim(KEY, attempt=a),
    ],
    ids=["mark_sent", "mark_failed", "extend_claim", "release_claim"],
)
def test_a_lost_claim_changes_nothing(journal, mark):
    first = claimed(journal)
    claimed(journal, NOW + LEASE + 1)  # another consumer took the row after the lease ended
    before = stored(journal)

    assert mark(journal, first) is False
    assert stored(journal) == before


@pytest.mark.parametrize(
    "mark",
    [
        lambda j: j.mark_sent(KEY, attempt=1, provider_id="ses-1", sent_at=NOW),
        lambda j: j.mark_failed(KEY, attempt=1, error="x"),
        lambda j: j.extend_claim(KEY, attempt=1, until=NOW + 999),
        lambda j: j.release_claim(KEY, attempt=1),
        lambda j: j.mark_accepted(KEY, provider_id="ses-1", sent_at=NOW),
        lambda j: j.note_extra_send(KEY, attempt=1, provider_id="ses-1", sent_at=NOW),
    ],
    ids=["mark_sent", "mark_failed", "extend", "release", "mark_accepted", "note_extra_send"],
)
def test_a_write_to_a_missing_row_creates_none(journal, mark):
    assert not mark(journal)
    assert stored(journal) is None


def test_mark_failed_under_our_claim_records_the_error(journal):
    attempt = claimed(journal)

    assert journal.mark_failed(KEY, attempt=attempt, error="SES said no")

    assert stored(journal)["Status"] == Status.FAILED
    assert stored(journal)["Error"] == "SES said no"


def test_extend_claim_moves_the_lease_end(journal):
    attempt = claimed(journal)

    assert journal.extend_claim(KEY, attempt=attempt, until=NOW + 3 * LEASE)

    result = journal.claim(claim_at(NOW + LEASE + 1))
    assert (result.state, result.lease_ends_at) == (ClaimState.IN_PROGRESS, NOW + 3 * LEASE)
    assert claimed(journal, NOW + 3 * LEASE + 1) == 2


def test_extend_claim_of_a_sent_row_is_refused(journal):
    attempt = claimed(journal)
    journal.mark_sent(KEY, attempt=attempt, provider_id="ses-1", sent_at=NOW)

    assert not journal.extend_claim(KEY, attempt=attempt, until=NOW + 999)
    assert stored(journal)["Status"] == Status.SENT


def test_release_claim_leaves_the_row_queued_and_claimable_at_once(journal):
    attempt = claimed(journal)

    assert journal.release_claim(KEY, attempt=attempt)

    assert stored(journal) == {"Status": Status.QUEUED, "Attempts": 1, "ClaimExpiresAt": 0}
    assert claimed(journal, NOW + 1) == 2


# --- writes without a claim -----------------------------------------------------------------


def test_mark_accepted_makes_the_row_sent_whoever_holds_it(journal):
    claimed(journal)
    claimed(journal, NOW + LEASE + 1)  # our claim (attempt 1) was lost; SES accepted its send

    assert journal.mark_accepted(KEY, provider_id="ses-1", sent_at=NOW + LEASE + 2)

    assert stored(journal)["Status"] == Status.SENT
    assert stored(journal)["SesMessageId"] == "ses-1"
    assert not journal.mark_accepted(KEY, provider_id="ses-2", sent_at=NOW + LEASE + 3)
    assert stored(journal)["SesMessageId"] == "ses-1"


def test_mark_accepted_of_a_failed_row_clears_its_error(journal):
    attempt = claimed(journal)
    journal.mark_failed(KEY, attempt=attempt, error="read timeout")

    assert journal.mark_accepted(KEY, provider_id="ses-1", sent_at=NOW + 1)

    assert stored(journal)["Status"] == Status.SENT
    assert "Error" not in stored(journal)


def test_note_extra_send_changes_neither_status_nor_the_marked_send(journal):
    claimed(journal)
    second = claimed(journal, NOW + LEASE + 1)
    journal.mark_sent(KEY, attempt=second, provider_id="ses-2", sent_at=NOW + LEASE + 2)
    before = stored(journal)

    journal.note_extra_send(KEY, attempt=1, provider_id="ses-1", sent_at=NOW + LEASE + 3)
    journal.note_extra_send(KEY, attempt=1, provider_id="ses-1b", sent_at=NOW + LEASE + 4)

    assert stored(journal) == before
    assert [(e["SesMessageId"], e["Attempt"]) for e in row_of(journal)["ExtraSends"]] == [
        ("ses-1", 1),
        ("ses-1b", 1),
    ]


@pytest.mark.parametrize(
    ("write", "status", "text"),
    [
        (lambda j, c: j.record_failure(c, error="no mapping"), Status.FAILED, "no mapping"),
        (
            lambda j, c: j.record_suppressed(c, reason="hard bounce"),
            Status.SUPPRESSED,
            "hard bounce",
        ),
    ],
    ids=["record_failure", "record_suppressed"],
)
class TestRecordsWithoutASend:
    def test_writes_a_new_row(self, journal, write, status, text):
        assert write(journal, claim_at())

        assert stored(journal) == {"Status": status, "Error": text}

    def test_leaves_a_live_claim_alone(self, journal, write, status, text):
        claimed(journal)
        before = stored(journal)

        assert not write(journal, claim_at(NOW + LEASE))

        assert stored(journal) == before

    def test_leaves_a_sent_row_alone(self, journal, write, status, text):
        journal.mark_sent(KEY, attempt=claimed(journal), provider_id="ses-1", sent_at=NOW)

        assert not write(journal, claim_at(NOW + LEASE + 1))

        assert stored(journal)["Status"] == Status.SENT

    def test_takes_an_ended_lease_and_keeps_the_attempt_count(self, journal, write, status, text):
        claimed(journal)

        assert write(journal, claim_at(NOW + LEASE + 1))

        assert stored(journal)["Status"] == status
        assert stored(journal)["Attempts"] == 1  # a later claim is attempt 2, not a second "1"

    def test_never_writes_another_producers_row(self, journal, write, status, text):
        journal.claim(claim_at(producer="api:1"))

        assert not write(journal, claim_at(NOW + LEASE + 1, producer="api:2"))
        assert not write(journal, replace(claim_at(NOW + LEASE + 1), producer=""))

        assert stored(journal)["Producer"] == "api:1"
        assert stored(journal)["Status"] == Status.QUEUED


def test_a_suppressed_row_is_final(journal):
    journal.record_suppressed(claim_at(), reason="complaint")

    assert journal.claim(claim_at(NOW + 10 * LEASE)).state is ClaimState.ALREADY_SENT
    assert not journal.record_failure(claim_at(NOW + 10 * LEASE), error="x")


def test_a_log_only_row_is_written_as_the_go_service_writes_it_and_says_why(journal):
    from emailops.core.journal_words import logged_only_words, row_state
    from emailops.core.lease import LeasePolicy
    from emailops.core.log_only import LogOnlyReason

    assert journal.record_logged_only(claim_at(), reason=LogOnlyReason.LOOP, detail="6th copy")

    item = row_of(journal)
    assert item["Status"] == Status.SENT and item["LoggedOnly"] is True
    assert item["MessageSent"] and "SesMessageId" not in item
    assert (item["LoggedOnlyReason"], item["LoggedOnlyDetail"]) == ("loop", "6th copy")
    row = journal.read(KEY)
    assert row_state(row, now=NOW, lease=LeasePolicy(LEASE)) == "not-delivered"
    assert logged_only_words(row).startswith("not delivered: a loop")
    assert journal.claim(claim_at(NOW + 10 * LEASE)).state is ClaimState.ALREADY_SENT
    assert not journal.record_logged_only(
        claim_at(NOW + 1), reason=LogOnlyReason.LOOP, detail="again"
    )


def test_a_go_log_only_row_reads_as_not_delivered_for_an_unknown_reason(journal):
    from emailops.core.journal_words import logged_only_words

    seed(journal, Status=Status.SENT, LoggedOnly=True, MessageSent="2026-05-28T20:26:41Z")

    assert logged_only_words(journal.read(KEY)) == "not delivered: logged only, reason unknown"
