"""The payload's JSON Schema: the committed docs/webhooks.schema.json is what its type makes (CI
fails on drift), and real payloads, built by the delivery code from journal rows for every event
type, validate against it and use no property it does not name."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from api import webhook_schema
from emailops.aws.journal_codec import failure_attributes, logged_only_attributes, row_from_item
from emailops.core.contract import organization_id_of
from emailops.core.delivery_events import parse_event
from emailops.core.journal_row import JournalRow
from emailops.core.webhook_payload import PAYLOAD_TYPES, payload
from emailops.core.webhooks import (
    EVENT_TYPES,
    WebhookEvent,
    event_from_delivery,
    failed_event,
    not_delivered_event,
    sent_event,
)
from tests.core.test_delivery_events import ses_event
from tests.journal_factory import BASE_TIME, journal_row

SCHEMA = json.loads(webhook_schema.OUTPUT.read_text(encoding="utf-8"))
VALIDATOR = Draft202012Validator(SCHEMA)


def test_committed_schema_matches_the_payload_type():
    assert webhook_schema.OUTPUT.read_text(encoding="utf-8") == webhook_schema.render(), (
        "docs/webhooks.schema.json is out of date: run python -m api.webhook_schema"
    )


def test_check_flags_a_stale_file(tmp_path, capsys):
    stale = tmp_path / "webhooks.schema.json"
    stale.write_text("{}\n")
    assert webhook_schema.main(["--output", str(stale), "--check"]) == 1
    assert "out of date" in capsys.readouterr().out
    assert webhook_schema.main(["--output", str(stale)]) == 0
    assert webhook_schema.main(["--output", str(stale), "--check"]) == 0


def test_the_schema_is_valid_and_has_one_shape_per_event_type():
    Draft202012Validator.check_schema(SCHEMA)
    assert tuple(PAYLOAD_TYPES) == EVENT_TYPES
    assert set(SCHEMA["discriminator"]["mapping"]) == set(EVENT_TYPES)
    assert len(SCHEMA["oneOf"]) == len(EVENT_TYPES)


def _row(**extra) -> JournalRow:
    item = journal_row("erin@example.com", at=BASE_TIME, **extra)
    item["Context"] = {"organizationId": 367, "teamName": "Curators", "apiToken": "s3cret"}
    return row_from_item(item)


def _ses(name: str, key: str) -> WebhookEvent:
    event = event_from_delivery(key, parse_event(ses_event(name), None))
    assert event is not None, name
    return event


def _events(key: str) -> list[tuple[str, WebhookEvent]]:
    return [
        ("sent", sent_event(key, ses_message_id="ses-1", sent_at=BASE_TIME)),
        ("delivered", _ses("delivery.json", key)),
        ("bounced hard", _ses("bounce.json", key)),
        ("bounced soft", _ses("bounce-transient.json", key)),
        ("complained", _ses("complaint.json", key)),
        ("rejected", _ses("reject.json", key)),
        ("delayed", _ses("delivery-delay.json", key)),
        ("opened", _ses("open.json", key)),
        ("clicked", _ses("click.json", key)),
        ("rendering failure", _ses("rendering-failure.json", key)),
        (
            "failed",
            failed_event(
                key, error="send failed: bad", error_kind="SendRejected", permanent=True, at=1
            ),
        ),
        ("failed, unknown", failed_event(key, error="x", error_kind="", permanent=None, at=1)),
        ("not delivered", not_delivered_event(key, reason="loop", at=BASE_TIME)),
    ]


def _rows() -> list[tuple[str, JournalRow | None]]:
    return [
        ("sent row", _row()),
        (
            "failed row",
            _row(status="FAILED", **failure_attributes("bad", kind="X", permanent=True)),
        ),
        ("log-only row", _row(**logged_only_attributes("loop", "5 in an hour", at=BASE_TIME))),
        ("queued row", _row(status="QUEUED")),
        ("row not found", None),
    ]


CASES = [
    (f"{event_name}, {row_name}", event_name, row_name)
    for event_name, _ in _events("k")
    for row_name, _ in _rows()
]


def _properties(definition_ref: str) -> dict:
    return SCHEMA["$defs"][definition_ref.rsplit("/", 1)[1]]["properties"]


@pytest.mark.parametrize("context_keys", [False, True], ids=["plain", "context keys"])
@pytest.mark.parametrize(("case", "event_name", "row_name"), CASES, ids=[c[0] for c in CASES])
def test_real_payloads_validate(case, event_name, row_name, context_keys):
    rows = dict(_rows())
    row = rows[row_name]
    key = row.key if row else "missing-row"
    event = dict(_events(key))[event_name]
    organization = organization_id_of(dict(row.context)) if row else None
    body = payload(event, row, organization=organization, context_keys=context_keys)
    data = json.loads(json.dumps(body))  # as the receiver gets it

    VALIDATOR.validate(data)
    shape = SCHEMA["discriminator"]["mapping"][data["type"]]
    assert set(data) <= set(_properties(shape))
    assert set(data["data"]) <= set(_properties(_properties(shape)["data"]["$ref"])), (
        "the payload has a property its type does not declare: add it to "
        "emailops.core.webhooks and run python -m api.webhook_schema"
    )
    assert ("contextKeys" in data["data"]) == (context_keys and row is not None)
    assert "s3cret" not in json.dumps(data)


def test_every_event_type_is_covered():
    assert {event.type for _, event in _events("k")} >= set(EVENT_TYPES)


def test_a_wrong_payload_is_refused():
    good = payload(_ses("bounce.json", "k"), _row(), organization="367")
    assert VALIDATOR.is_valid(good)
    assert not VALIDATOR.is_valid({**good, "type": "email.unknown"})
    assert not VALIDATOR.is_valid({**good, "data": {**good["data"], "hard": "yes"}})
    data = dict(good["data"])
    del data["bounceType"]
    assert not VALIDATOR.is_valid({**good, "data": data})
