"""The preferences table against moto: one item per (address_key, category), its last 20 changes,
erasure of an address, and AWS errors as the core's errors saying what failed for which key."""

from __future__ import annotations

import pytest

from emailops.aws import provision
from emailops.aws.preferences import HISTORY_LENGTH, DynamoPreferenceStore
from emailops.core.errors import ConfigurationFault
from emailops.core.preferences import HowChanged, Preference, PreferenceChange

TABLE = "email-preferences"


@pytest.fixture
def store(aws) -> DynamoPreferenceStore:
    return DynamoPreferenceStore(aws.dynamodb, TABLE)


def unsubscribed(address: str, category: str, at: int, **kw) -> Preference:
    return Preference(address, category, False, kw.pop("how", HowChanged.ONE_CLICK), at, **kw)


def test_the_fixture_and_bootstrap_create_the_table_keyed_by_address_and_category(aws):
    described = aws.dynamodb.describe_table(TableName=TABLE)["Table"]
    assert described["KeySchema"] == [
        {"AttributeName": "Address", "KeyType": "HASH"},
        {"AttributeName": "Category", "KeyType": "RANGE"},
    ]
    lines: list[str] = []
    provision.ensure_preferences_table(aws.dynamodb, TABLE, lines.append)
    assert lines == [f"table {TABLE}: exists"]


def test_a_preference_is_stored_under_the_address_key_and_read_in_any_spelling(aws, store):
    store.set(unsubscribed("Erin <Erin@Example.COM>", "dataset-activity", 1764684000, label="D"))

    [item] = aws.dynamodb.scan(TableName=TABLE)["Items"]
    assert item["Address"] == {"S": "erin@example.com"}
    assert item["Category"] == {"S": "dataset-activity"}
    assert item["Subscribed"] == {"BOOL": False}
    assert item["How"] == {"S": "one-click"}
    assert item["ChangedAt"] == {"N": "1764684000"}
    assert item["Label"] == {"S": "D"}
    assert item["History"] == {
        "L": [
            {
                "M": {
                    "Subscribed": {"BOOL": False},
                    "How": {"S": "one-click"},
                    "At": {"N": "1764684000"},
                }
            }
        ]
    }
    assert store.get("ERIN@example.com", "dataset-activity") == Preference(
        "erin@example.com", "dataset-activity", False, "one-click", 1764684000, "D"
    )
    assert store.get("erin@example.com", "newsletter") is None
    assert store.get("someone@example.com", "dataset-activity") is None


def test_set_replaces_the_preference_and_appends_to_its_history(store):
    store.set(unsubscribed("a@example.com", "news", 100, label="News"))
    store.set(Preference("a@example.com", "news", True, HowChanged.PAGE, 200))

    assert store.get("a@example.com", "news") == Preference(
        "a@example.com", "news", True, "page", 200, ""
    )
    assert store.history("a@example.com") == [
        PreferenceChange("news", True, "page", 200),
        PreferenceChange("news", False, "one-click", 100),
    ]


def test_changes_of_the_same_second_are_newest_first(store):
    """An unsubscribe and its Undo on the page usually fall in one second."""
    store.set(unsubscribed("a@example.com", "news", 100))
    store.set(Preference("a@example.com", "news", True, HowChanged.PAGE, 100))
    assert [c.subscribed for c in store.history("a@example.com")] == [True, False]


def test_the_history_keeps_the_last_20_changes(store):
    for at in range(1, HISTORY_LENGTH + 6):
        store.set(Preference("a@example.com", "news", at % 2 == 0, HowChanged.PAGE, at))

    history = store.history("a@example.com")
    assert len(history) == HISTORY_LENGTH
    assert [change.at for change in history] == list(range(HISTORY_LENGTH + 5, 5, -1))


def test_of_address_and_history_cover_every_category_and_only_that_address(store):
    store.set(unsubscribed("a@example.com", "news", 100))
    store.set(unsubscribed("A@example.com", "activity", 300, how=HowChanged.SUPPORT))
    store.set(unsubscribed("b@example.com", "news", 200))

    assert sorted(p.category for p in store.of_address("a@EXAMPLE.com")) == ["activity", "news"]
    assert [(c.category, c.at) for c in store.history("a@example.com")] == [
        ("activity", 300),
        ("news", 100),
    ]


def test_remove_address_deletes_every_category_of_that_address_only(store):
    store.set(unsubscribed("a@example.com", "news", 100))
    store.set(unsubscribed("a@example.com", "activity", 100))
    store.set(unsubscribed("b@example.com", "news", 100))

    assert store.remove_address("A@Example.com") == 2
    assert store.of_address("a@example.com") == []
    assert store.history("a@example.com") == []
    assert [p.address for p in store.of_address("b@example.com")] == ["b@example.com"]
    assert store.remove_address("a@example.com") == 0


def test_a_missing_table_is_a_configuration_fault_naming_the_key(aws):
    missing = DynamoPreferenceStore(aws.dynamodb, "no-such-table")
    with pytest.raises(ConfigurationFault) as info:
        missing.get("A@example.com", "news")
    assert info.value.what == "read preference"
    assert info.value.key == "a@example.com news"
    assert not info.value.permanent
