"""LeasePolicy: when a claim ends, for our rows (ClaimExpiresAt) and Go-era rows (Timestamp + the
lease), and where the length comes from when CLAIM_LEASE_SECONDS is 0."""

from __future__ import annotations

import pytest

from emailops.aws.journal_codec import row_from_item
from emailops.core.errors import LeaseUnknown, TransientError
from emailops.core.lease import LeasePolicy

NOW = 1_750_000_000


def go_row(age: int):
    return row_from_item({"Id": "k", "Status": "QUEUED", "Timestamp": NOW - age})


@pytest.mark.parametrize(("age", "stuck"), [(299, False), (300, False), (301, True)])
def test_a_go_rows_claim_holds_through_its_end_and_is_stuck_a_second_later(age, stuck):
    policy = LeasePolicy(300)
    row = go_row(age)

    assert policy.ends_at(row) == NOW - age + 300
    assert (policy.stuck(row, now=NOW), policy.held(row, now=NOW)) == (stuck, not stuck)
    # The claim condition's number says the same: Timestamp < stale.
    assert (row.timestamp < policy.stale_before(NOW)) is stuck


def test_a_row_that_says_neither_when_it_was_claimed_nor_until_is_neither_stuck_nor_held():
    row = row_from_item({"Id": "k", "Status": "QUEUED"})
    policy = LeasePolicy(30)
    assert policy.ends_at(row) is None
    assert not policy.stuck(row, now=NOW) and not policy.held(row, now=NOW)


def test_the_queue_is_asked_only_for_a_row_without_claim_expires_at():
    asked = []
    policy = LeasePolicy(0, visibility_timeout=lambda: asked.append(1) or 300)
    ours = row_from_item({"Id": "k", "Status": "QUEUED", "Timestamp": 1, "ClaimExpiresAt": NOW})

    assert policy.ends_at(ours) == NOW and not policy.stuck(ours, now=NOW)
    assert asked == []
    assert policy.ends_at(go_row(10)) == NOW - 10 + 300 and asked == [1]


def test_claim_lease_seconds_when_set_is_the_length_and_the_queue_is_never_asked():
    policy = LeasePolicy(45, visibility_timeout=lambda: pytest.fail("asked the queue"))
    assert policy.seconds == 45 and policy.claim_ends_at(NOW) == NOW + 45


def _unreachable() -> int:
    raise TransientError("read queue attributes", reason="connect timeout")


@pytest.mark.parametrize(
    ("read", "says"), [(_unreachable, "connect timeout"), (lambda: 0, "visibility timeout is 0")]
)
def test_a_queue_that_cannot_say_is_a_clear_lease_unknown(read, says):
    policy = LeasePolicy(0, visibility_timeout=read)
    with pytest.raises(LeaseUnknown, match=says) as raised:
        policy.ends_at(go_row(10))
    assert "set CLAIM_LEASE_SECONDS" in raised.value.describe() and not raised.value.permanent


def test_a_policy_needs_a_length_or_a_queue():
    with pytest.raises(ValueError, match="needs a length"):
        LeasePolicy(0)
    with pytest.raises(ValueError, match="needs a length"):
        LeasePolicy(-1)
