"""The ``email-rate-counter`` adapter on moto: Go's counter update, the loop set, the holds."""

from __future__ import annotations

from emailops import container
from emailops.aws.rate_counter import DynamoRateCounters

TABLE = "email-rate-counter"


def counters() -> DynamoRateCounters:
    return DynamoRateCounters(container.current().client("dynamodb"), TABLE)


def item(bucket: str) -> dict:
    return (
        container.current()
        .client("dynamodb")
        .get_item(TableName=TABLE, Key={"Bucket": {"S": bucket}})["Item"]
    )


def test_increment_is_gos_update_and_keeps_the_first_expiry(aws):
    table = counters()
    assert table.increment("global#60", expires_at=180) == 1
    assert table.increment("global#60", expires_at=999) == 2
    assert item("global#60") == {
        "Bucket": {"S": "global#60"},
        "Count": {"N": "2"},
        "ExpiresAt": {"N": "180"},
    }


def test_note_copy_keeps_at_most_the_limit_and_counts_the_rest(aws):
    table = counters()
    assert [table.note_copy("loop#b", m, limit=2, expires_at=1).within for m in "aab"] == [True] * 3
    over = [table.note_copy("loop#b", m, limit=2, expires_at=1) for m in "cd"]
    assert [(o.within, o.over) for o in over] == [(False, 1), (False, 2)]
    assert table.note_copy("loop#b", "a", limit=2, expires_at=1).within  # already counted
    assert set(item("loop#b")["Copies"]["SS"]) == {"a", "b"}


def test_holds_keep_their_first_time_and_are_listed_while_current(aws):
    table = counters()
    kw = {"message_id": "invite", "why": "over 5 per minute (global)", "expires_at": 999}
    assert table.note_hold("hold#x", now=100, until=120, **kw) == 100
    assert table.note_hold("hold#x", now=120, until=180, **kw) == 100
    [held] = table.held(now=150)
    assert (held.message_id, held.first_held_at, held.held_until, held.holds) == (
        "invite",
        100,
        180,
        2,
    )
    assert table.held(now=300) == []
    table.forget_hold("hold#x")
    assert table.held(now=150) == []


def test_a_hold_keeps_its_recipient_hashed_and_masked_and_is_found_by_it(aws):
    """Issue 36: a held request is findable by recipient while it waits, and shown masked; the
    record never holds the address."""
    from emailops.core.send_guard import HeldRecipient, recipient_digest

    table = counters()
    kw = {"message_id": "invite", "why": "over 5 per minute (global)", "expires_at": 999}
    table.note_hold(
        "hold#x", now=100, until=120, recipient=HeldRecipient.of("Dana@Example.com"), **kw
    )
    table.note_hold(
        "hold#y", now=100, until=120, recipient=HeldRecipient.of("eve@example.com"), **kw
    )

    [held] = table.held_for(recipient_digest("dana@example.com"), now=110)
    assert held.recipient_masked == "d***@example.com"
    assert "dana" not in str(item("hold#x")).lower()
    assert len(table.held(now=110)) == 2
    assert table.held_for(recipient_digest("dana@example.com"), now=300) == []  # ended
    table.forget_hold("hold#x")
    assert table.held_for(recipient_digest("dana@example.com"), now=110) == []


def test_a_hold_whose_recipient_index_fails_keeps_its_first_time(aws, caplog):
    """The index is the console's: losing it must not reset the hold budget."""
    from botocore.exceptions import ClientError

    from emailops.core.send_guard import HeldRecipient

    real = container.current().client("dynamodb")

    class Failing:
        def __getattr__(self, name):
            return getattr(real, name)

        def update_item(self, **kwargs):
            if kwargs["Key"]["Bucket"]["S"].startswith("heldfor#"):
                raise ClientError({"Error": {"Code": "InternalServerError"}}, "UpdateItem")
            return real.update_item(**kwargs)

    table = DynamoRateCounters(Failing(), TABLE)
    kw = {"message_id": "invite", "why": "cap", "expires_at": 999}
    who = HeldRecipient.of("dana@example.com")
    assert table.note_hold("hold#z", now=100, until=120, recipient=who, **kw) == 100
    assert table.note_hold("hold#z", now=160, until=180, recipient=who, **kw) == 100
    assert "rate.hold_not_indexed" in caplog.text
