"""JournalRow read by the one lease rule (LeasePolicy, Go-era rows included), and the codec that
reads rows."""

from __future__ import annotations

from emailops.aws.journal_codec import row_from_item
from emailops.core.lease import LeasePolicy

NOW = 1_750_000_000
LEASE = 60
POLICY = LeasePolicy(LEASE)


def test_a_go_queued_row_without_claim_expires_at_is_stuck_lease_seconds_after_its_timestamp():
    row = row_from_item({"Id": "k", "Status": "QUEUED", "Timestamp": NOW - 3600})
    assert row.claim_expires_at is None
    assert POLICY.ends_at(row) == NOW - 3600 + LEASE
    assert POLICY.stuck(row, now=NOW)


def test_a_go_queued_row_within_its_lease_is_not_stuck():
    row = row_from_item({"Id": "k", "Status": "QUEUED", "Timestamp": NOW - 10})
    assert not POLICY.stuck(row, now=NOW)


def test_our_row_reads_claim_expires_at_and_a_released_claim_is_stuck():
    live = row_from_item({"Id": "k", "Status": "QUEUED", "Timestamp": 1, "ClaimExpiresAt": NOW})
    assert POLICY.ends_at(live) == NOW and not POLICY.stuck(live, now=NOW)
    released = row_from_item({"Id": "k", "Status": "QUEUED", "ClaimExpiresAt": 0})
    assert POLICY.stuck(released, now=NOW)


def test_only_queued_rows_have_a_lease():
    for status in ("SENT", "FAILED", "SUPPRESSED"):
        row = row_from_item({"Id": "k", "Status": status, "Timestamp": 1})
        assert POLICY.ends_at(row) is None and not POLICY.stuck(row, now=NOW)


def test_failure_facts_read_from_the_row_and_go_rows_do_not_say():
    ours = row_from_item({"Id": "k", "Status": "FAILED", "ErrorKind": "SendRejected",
                          "Permanent": True, "Error": "send email [k]: MessageRejected: no"})  # fmt: skip
    assert (ours.error_kind, ours.permanent) == ("SendRejected", True)
    go = row_from_item({"Id": "k", "Status": "FAILED", "Error": "send email [k]: boom"})
    assert (go.error_kind, go.permanent) == ("", None)


def test_delivery_facts_and_timeline():
    row = row_from_item(
        {
            "Id": "k",
            "DeliveryStatus": "BOUNCED",
            "BounceType": "Permanent",
            "BounceSubType": "General",
            "DiagnosticCode": "smtp; 550 5.1.1 user unknown",
            "BounceStatusCode": "5.1.1",
            "DeliveryEvents": [{"Type": "Bounce", "At": "2026-01-01T00:00:00Z", "Id": "e1"}, 7],
        }
    )
    assert row.delivery.permanent_bounce and row.delivery.status_code == "5.1.1"
    assert [entry.id for entry in row.timeline] == ["e1"]


def test_claim_words_and_the_rows_one_word_state_follow_the_lease_rule():
    from emailops.core.journal_words import claim_words, row_state

    def read(item):
        row = row_from_item({"Id": "k", **item})
        claim = claim_words(row, now=NOW, lease=POLICY)
        return (claim.state, claim.lease_ends_at) if claim else None, row_state(
            row, now=NOW, lease=POLICY
        )

    assert read({"Status": "QUEUED", "Timestamp": NOW - 3600}) == (
        ("stuck", NOW - 3600 + LEASE),
        "stuck",
    )
    assert read({"Status": "QUEUED", "Timestamp": NOW - 5}) == (
        ("in-progress", NOW - 5 + LEASE),
        "in-progress",
    )
    assert read({"Status": "QUEUED"}) == (("claimed", None), "claimed")
    assert read({"Status": "FAILED", "Timestamp": NOW}) == (None, "failed")
    assert read({"Status": "SENT", "Timestamp": NOW}) == (None, "no-report")
    assert read({"Status": "SENT", "DeliveryStatus": "DELIVERED"}) == (None, "delivered")
    assert read({"Status": "SUPPRESSED"}) == (None, "suppressed")
    assert read({"Status": "ODD"}) == (None, "odd")
