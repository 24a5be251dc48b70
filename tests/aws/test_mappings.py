"""DynamoMappingStore against moto: reads, and optimistic versioning that no edit can bypass."""

from __future__ import annotations

import pytest

from emailops import container
from emailops.aws.mappings import DynamoMappingStore
from emailops.core.errors import ConcurrentUpdate, TransientError
from emailops.core.ports import TemplateMapping

TABLE = "email-message-templates"


@pytest.fixture
def store(aws) -> DynamoMappingStore:
    return container.current().mapping_store


def mapping(subject="Welcome", *, by="ann", template_file="welcome.html") -> TemplateMapping:
    return TemplateMapping(
        "welcome", template_file, subject, updated_by=by, updated_at="2026-01-01"
    )


def raw(aws, message_id: str) -> dict:
    return aws.dynamodb.get_item(TableName=TABLE, Key={"MessageId": {"S": message_id}}).get(
        "Item", {}
    )


def put_hand_written(aws, message_id="legacy", **extra) -> None:
    """A row as the Go tooling (or a person in the AWS console) writes it: no Version."""
    aws.dynamodb.put_item(
        TableName=TABLE,
        Item={
            "MessageId": {"S": message_id},
            "TemplateFile": {"S": "legacy.html"},
            "Subject": {"S": "Legacy {{.x}}"},
            **extra,
        },
    )


def test_get_mapping(aws, store):
    assert store.get_mapping("welcome") is None
    store.save_mapping(mapping(), expected_version=None)
    got = store.get_mapping("welcome")
    assert got == TemplateMapping("welcome", "welcome.html", "Welcome", 1, "ann", "2026-01-01")


def test_create_writes_version_1_and_the_go_attributes(aws, store):
    saved = store.save_mapping(mapping(), expected_version=None)
    assert saved.version == 1
    assert raw(aws, "welcome") == {
        "MessageId": {"S": "welcome"},
        "TemplateFile": {"S": "welcome.html"},
        "Subject": {"S": "Welcome"},
        "Version": {"N": "1"},
        "UpdatedBy": {"S": "ann"},
        "UpdatedAt": {"S": "2026-01-01"},
        "Priority": {"S": "normal"},  # the reputation guard's; the Go service ignores it
    }


def test_priority_round_trips_and_a_row_without_one_is_normal(aws, store):
    from dataclasses import replace

    store.save_mapping(replace(mapping(), priority="bulk"), expected_version=None)
    assert store.get_mapping("welcome").priority == "bulk"
    aws.dynamodb.put_item(
        TableName="email-message-templates",
        Item={"MessageId": {"S": "go"}, "TemplateFile": {"S": "go.html"}, "Subject": {"S": "S"}},
    )
    assert store.get_mapping("go").priority == "normal"


def test_creating_twice_is_a_concurrent_update(store):
    store.save_mapping(mapping(by="ann"), expected_version=None)
    with pytest.raises(ConcurrentUpdate) as info:
        store.save_mapping(mapping("Other", by="bob"), expected_version=None)
    assert "already exists" in info.value.reason
    assert info.value.current.subject == "Welcome"
    assert info.value.current.version == 1
    assert store.get_mapping("welcome").subject == "Welcome"


def test_edit_at_the_current_version(store):
    store.save_mapping(mapping(), expected_version=None)
    saved = store.save_mapping(mapping("Edited", by="bob"), expected_version=1)
    assert saved.version == 2
    assert store.get_mapping("welcome") == saved


def test_edit_at_a_stale_version_is_refused_and_carries_the_current_row(store):
    store.save_mapping(mapping(), expected_version=None)
    store.save_mapping(mapping("Bob's", by="bob"), expected_version=1)
    with pytest.raises(ConcurrentUpdate) as info:
        store.save_mapping(mapping("Ann's", by="ann"), expected_version=1)
    assert info.value.current.version == 2
    assert info.value.current.subject == "Bob's"
    assert "version 2" in info.value.reason and "bob" in info.value.reason
    assert store.get_mapping("welcome").subject == "Bob's"
    assert info.value.permanent


def test_edit_of_a_deleted_row_is_refused(store):
    store.save_mapping(mapping(), expected_version=None)
    store.delete_mapping("welcome", expected_version=1)
    with pytest.raises(ConcurrentUpdate) as info:
        store.save_mapping(mapping("Edited"), expected_version=1)
    assert info.value.current is None
    assert "deleted" in info.value.reason
    assert store.get_mapping("welcome") is None


def test_hand_written_row_without_version_is_editable_at_version_0(aws, store):
    put_hand_written(aws)
    legacy = store.get_mapping("legacy")
    assert (legacy.version, legacy.template_file, legacy.subject) == (
        0,
        "legacy.html",
        "Legacy {{.x}}",
    )
    saved = store.save_mapping(
        TemplateMapping("legacy", "legacy.html", "New", updated_by="ann"), expected_version=0
    )
    assert saved.version == 1
    assert raw(aws, "legacy")["Version"] == {"N": "1"}
    # Version 0 now means "the row still has no Version", which is no longer true.
    with pytest.raises(ConcurrentUpdate) as info:
        store.save_mapping(TemplateMapping("legacy", "legacy.html", "Again"), expected_version=0)
    assert info.value.current.version == 1


def test_version_0_does_not_create_a_row(store):
    with pytest.raises(ConcurrentUpdate):
        store.save_mapping(mapping(), expected_version=0)
    assert store.get_mapping("welcome") is None


def test_delete_needs_the_current_version(store):
    store.save_mapping(mapping(), expected_version=None)
    store.save_mapping(mapping("v2"), expected_version=1)
    with pytest.raises(ConcurrentUpdate) as info:
        store.delete_mapping("welcome", expected_version=1)
    assert info.value.current.version == 2
    assert store.get_mapping("welcome") is not None
    store.delete_mapping("welcome", expected_version=2)
    assert store.get_mapping("welcome") is None


def test_delete_hand_written_row_at_version_0(aws, store):
    put_hand_written(aws)
    store.delete_mapping("legacy", expected_version=0)
    assert store.get_mapping("legacy") is None


def test_list_mappings_is_sorted_and_complete(aws, store):
    for message_id in ["zeta", "alpha", "mid"]:
        store.save_mapping(
            TemplateMapping(message_id, f"{message_id}.html", "S"), expected_version=None
        )
    put_hand_written(aws, "beta")
    listed = store.list_mappings()
    assert [m.message_id for m in listed] == ["alpha", "beta", "mid", "zeta"]
    assert {m.message_id: m.version for m in listed} == {"alpha": 1, "beta": 0, "mid": 1, "zeta": 1}


def test_a_missing_table_is_a_transient_error(aws):
    broken = DynamoMappingStore(aws.dynamodb, "no-such-table")
    with pytest.raises(TransientError):
        broken.get_mapping("welcome")
    with pytest.raises(TransientError):
        broken.list_mappings()
    with pytest.raises(TransientError):
        broken.save_mapping(mapping(), expected_version=None)


def test_send_disabled_is_the_go_services_bool_both_ways(aws, store):
    from dataclasses import replace

    store.save_mapping(replace(mapping(), send_disabled=True), expected_version=None)
    assert raw(aws, "welcome")["SendDisabled"] == {"BOOL": True}
    assert store.get_mapping("welcome").send_disabled is True
    put_hand_written(aws, SendDisabled={"BOOL": True})  # as an operator of the Go service sets it
    assert store.get_mapping("legacy").send_disabled is True
    put_hand_written(aws, "plain")
    assert store.get_mapping("plain").send_disabled is False
