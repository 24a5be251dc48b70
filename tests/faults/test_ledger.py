"""The fault suite's bookkeeping: each duplicate gets the right cause, and only the allowed causes
count towards the allowance."""

from __future__ import annotations

import pytest

from tests.faults.ledger import Ledger
from tests.support.aws_proxy import Call

pytestmark = pytest.mark.faults


def send(at: float, client: str, to: str, **kw) -> Call:
    return Call(at, client, "ses", "SendEmail", 200, recipients=(to,), **kw)


def mark(at: float, client: str, key: str, status: int = 200, **kw) -> Call:
    return Call(at, client, "dynamodb", "UpdateItem", status, key=key, sets_status="SENT", **kw)


EXPECTED = {"a@x.test": "ka", "b@x.test": "kb", "c@x.test": "kc", "d@x.test": "kd"}


def ledger(sends, marks, kills=None) -> Ledger:
    return Ledger(EXPECTED, sends, sends + marks, kills or {})


def test_allowed_causes_and_the_allowance():
    sends = [
        send(1, "c1-1", "a@x.test", fault="lost SES reply", reply_lost=True),
        send(2, "c1-1", "a@x.test"),
        send(3, "c2-1", "b@x.test"),  # c2-1 was killed before marking
        send(20, "c3-1", "b@x.test"),
        send(4, "c3-1", "c@x.test"),
    ]
    marks = [mark(2.1, "c1-1", "ka"), mark(20.1, "c3-1", "kb"), mark(4.1, "c3-1", "kc")]
    result = ledger(sends, marks, kills={"c2-1": 3.05})
    assert result.duplicates == 2 and result.allowance == 2
    assert result.causes == {"lost SES reply": 1, "kill between send and mark": 1}
    assert result.lost == ["d@x.test"] and result.delivered == 3


def test_a_failed_mark_or_a_send_after_sent_is_not_excused():
    sends = [
        send(1, "c1-1", "a@x.test"),
        send(9, "c2-1", "a@x.test"),
        send(1, "c1-1", "b@x.test"),
        send(9, "c2-1", "b@x.test"),
    ]
    marks = [
        mark(1.1, "c1-1", "ka", status=400, fault="DynamoDB throttling"),
        mark(9.1, "c2-1", "ka"),
        mark(1.1, "c1-1", "kb"),  # the row was SENT, and still it went out again
        mark(9.1, "c2-1", "kb", status=400, error_code="ConditionalCheckFailedException"),
    ]
    result = ledger(sends, marks)
    assert result.causes == {
        "mark failed (DynamoDB throttling)": 1,
        "sent again although marked SENT": 1,
    }
    assert result.duplicates == 2 and result.allowance == 0
