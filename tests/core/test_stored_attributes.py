"""The support view's raw listing is the reader's typed value, not a bag on JournalRow: the codec
orders the stored attributes and says what each one is; RowMask masks them as it masks the row."""

from __future__ import annotations

import dataclasses

from emailops.aws.journal_codec import stored_row
from emailops.core.journal_row import JournalRow
from emailops.core.masking import MASK, RowMask
from emailops.core.stored_attributes import AttributeRole

ITEM = {
    "Zeta": "foreign",
    "Context": {"teamName": "Ops", "verificationCode": "981276", "pin": "42"},
    "Subject": "Your code is 981276 (pin 42)",
    "ExpiresAt": 1_787_776_000,
    "Timestamp": 1_780_000_000,
    "TemplateKey": "default/added-to-team.html",
    "DeliveryEvents": [{"Type": "Bounce", "At": "x", "Id": "e", "Summary": "981276 gone"}],
    "Id": "k",
}


def test_a_row_carries_no_raw_attributes():
    assert "attributes" not in {f.name for f in dataclasses.fields(JournalRow)}


def test_the_codec_orders_the_stored_attributes_and_says_what_each_is():
    stored = stored_row(ITEM).attributes

    assert [a.name for a in stored] == [
        "Id", "Timestamp", "Subject", "TemplateKey", "ExpiresAt", "Context", "DeliveryEvents",
        "Zeta",  # one the codec does not know: after the known ones, sorted
    ]  # fmt: skip
    roles = {a.name: a.role for a in stored}
    assert roles["Timestamp"] == AttributeRole.EPOCH and roles["ExpiresAt"] == AttributeRole.EXPIRY
    assert roles["Context"] == AttributeRole.CONTEXT
    assert roles["DeliveryEvents"] == AttributeRole.TIMELINE
    assert (
        roles["TemplateKey"] == AttributeRole.TEMPLATE_KEY and roles["Zeta"] == AttributeRole.PLAIN
    )
    assert stored.as_dict() == {name: ITEM[name] for name in roles}


def test_stored_attributes_are_masked_as_the_row_is():
    found = stored_row(ITEM)
    mask = RowMask(found.row.context, ("code", "pin"))

    shown = mask.stored(found.attributes).as_dict()

    assert shown["Context"] == {"teamName": "Ops", "verificationCode": MASK, "pin": MASK}
    assert shown["Subject"] == f"Your code is {MASK} (pin 42)"  # "42" is too short to chase
    assert shown["DeliveryEvents"][0]["Summary"] == f"{MASK} gone"
    assert mask.row(found.row).subject == shown["Subject"]
    assert found.attributes.as_dict()["Subject"] == ITEM["Subject"]  # a copy: the read is kept
