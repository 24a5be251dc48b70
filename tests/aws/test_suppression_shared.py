"""One suppression table with the Go service (moto in-process): its rows stop our sends, our
bounces write rows its exact lookup finds, and a table in our old shape keeps working and is
copied, losing nothing, by ``migrate_suppression_table``."""

from __future__ import annotations

import copy
import io
from datetime import datetime

import pytest
from django.core.management import call_command

from emailops import container
from emailops.aws import provision
from emailops.core.pipeline import Action
from emailops.core.ports import TemplateMapping
from tests.aws.test_calls_per_email import body
from tests.aws.test_journal import NOW, claim
from tests.core.test_delivery_events import SES_ID, envelope, ses_event

TABLE = "email-suppression"
OLD = "old-suppression"
AS_WRITTEN = "Bob.Smith@Example.COM"  # the producer's spelling, which the Go service looks up


@pytest.fixture
def pipeline(aws):
    built = container.current()
    built.mapping_store.save_mapping(
        TemplateMapping("added-to-team", "added-to-team.html", "Welcome to {{.teamName}}"),
        expected_version=None,
    )
    built.template_store.write_template("default/added-to-team.html", "<p>{{.teamName}}</p>")
    return lambda: container.current().build_pipeline(lease_seconds=30)


def go_get(aws, email: str, table: str = TABLE) -> dict | None:
    """The Go service's lookup: the recipient exactly as written, read consistently."""
    return aws.dynamodb.get_item(
        TableName=table, Key={"Email": {"S": email}}, ConsistentRead=True
    ).get("Item")


def go_put(aws, email: str, reason: str = "bounce") -> None:
    """What the Go service's bounce handler writes."""
    aws.dynamodb.put_item(
        TableName=TABLE,
        Item={
            "Email": {"S": email},
            "Reason": {"S": reason},
            "CreatedAt": {"S": "2026-12-01T10:00:00Z"},
        },
    )


def bounce_of(address: str) -> str:
    event = copy.deepcopy(ses_event("bounce.json"))
    event["bounce"]["bouncedRecipients"][0]["emailAddress"] = address
    event["mail"]["destination"] = [address]
    return envelope(event)


def test_a_go_written_row_stops_our_send_to_that_recipient(aws, pipeline):
    go_put(aws, AS_WRITTEN)
    outcome = pipeline().process(body(AS_WRITTEN))
    assert (outcome.action, outcome.sent) == (Action.DELETE, 0)
    assert aws.sent_emails() == []
    entry = container.current().suppression_list.get(AS_WRITTEN)
    assert (entry.reason, entry.created_at) == (
        "bounce",
        int(datetime.fromisoformat("2026-12-01T10:00:00+00:00").timestamp()),
    )
    assert "hard bounce" in container.current().suppression_list.suppression_reason(AS_WRITTEN)


def test_a_go_row_without_a_reason_still_suppresses(aws, pipeline):
    aws.dynamodb.put_item(TableName=TABLE, Item={"Email": {"S": "bare@example.com"}})
    assert pipeline().process(body("bare@example.com")).sent == 0


def test_our_hard_bounce_writes_a_row_the_go_lookup_finds(aws_events):
    journal = container.current().journal
    journal.claim(claim("journal-key-1", recipient=AS_WRITTEN))
    journal.mark_sent("journal-key-1", attempt=1, provider_id=SES_ID, sent_at=NOW)
    container.current().delivery_event_handler.handle(bounce_of(AS_WRITTEN))

    found = go_get(aws_events, AS_WRITTEN)
    assert found is not None and found["Reason"] == {"S": "bounce"}
    datetime.fromisoformat(found["CreatedAt"]["S"].replace("Z", "+00:00"))  # RFC 3339 text
    assert "mailbox does not exist" in found["Detail"]["S"]
    # ... and the normalised spelling, for our lookups of any spelling of the mailbox.
    assert go_get(aws_events, "bob.smith@example.com")["Reason"] == {"S": "bounce"}
    assert container.current().suppression_list.get("BOB.smith@example.com") is not None


def test_the_producers_spelling_is_written_when_ses_reports_another(aws_events):
    """The Go service looks up the request's spelling; SES may report the mailbox otherwise
    (here lowercased). The journal row the event names has the producer's spelling: written too."""
    journal = container.current().journal
    journal.claim(claim("journal-key-1", recipient=AS_WRITTEN))
    journal.mark_sent("journal-key-1", attempt=1, provider_id=SES_ID, sent_at=NOW)
    container.current().delivery_event_handler.handle(bounce_of("bob.smith@example.com"))
    assert go_get(aws_events, AS_WRITTEN)["Reason"] == {"S": "bounce"}
    assert go_get(aws_events, "bob.smith@example.com") is not None


def test_another_mailbox_is_never_written_as_a_spelling(aws):
    store = container.current().suppression_list
    store.add("a@x.test", reason="bounce", detail="", source="s", now=NOW, also=("b@x.test",))
    assert go_get(aws, "b@x.test") is None and go_get(aws, "a@x.test") is not None


def test_a_removal_lifts_every_spelling(aws):
    store = container.current().suppression_list
    go_put(aws, AS_WRITTEN)
    go_put(aws, "bob.SMITH@example.com")
    store.add("bob.smith@example.com", reason="manual", detail="asked", source="", now=NOW)
    assert store.remove("Bob.Smith@example.com").reason == "manual"
    assert aws.dynamodb.scan(TableName=TABLE)["Items"] == []


def test_the_index_rebuild_reads_every_spelling_normalised(aws):
    go_put(aws, AS_WRITTEN)
    store = container.current().suppression_list
    store.add("c@x.test", reason="complaint", detail="", source="e", now=NOW)
    assert sorted(set(store.addresses())) == ["bob.smith@example.com", "c@x.test"]


# --- a table in our old shape -------------------------------------------------------------------


def old_table(aws, rows: int = 3) -> list[str]:
    aws.dynamodb.create_table(
        TableName=OLD,
        KeySchema=[{"AttributeName": "Address", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "Address", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    addresses = [f"old{i}@example.com" for i in range(rows)]
    for i, address in enumerate(addresses):
        aws.dynamodb.put_item(
            TableName=OLD,
            Item={
                "Address": {"S": address},
                "Reason": {"S": ("BOUNCE", "COMPLAINT", "MANUAL")[i % 3]},
                "Detail": {"S": f"detail {i}"},
                "Source": {"S": f"evt-{i}"},
                "CreatedAt": {"N": str(NOW + i)},
            },
        )
    return addresses


@pytest.fixture
def on_old_table(aws, settings):
    addresses = old_table(aws)
    settings.SUPPRESSION_TABLE = OLD
    container.reset()
    return addresses


def test_on_an_old_table_the_consumer_still_sends_and_suppresses(aws, pipeline, on_old_table):
    assert pipeline().process(body("old0@example.com")).sent == 0
    assert pipeline().process(body("Old1@Example.com")).sent == 0
    assert pipeline().process(body("fresh@example.com")).sent == 1
    store = container.current().suppression_list
    assert store.get("old2@example.com").reason == "manual"
    assert store.add("New@Example.com", reason="bounce", detail="550", source="s", now=NOW)
    item = aws.dynamodb.get_item(TableName=OLD, Key={"Address": {"S": "new@example.com"}})["Item"]
    assert item["Reason"] == {"S": "BOUNCE"} and item["CreatedAt"] == {"N": str(NOW)}
    assert pipeline().process(body("new@example.com")).sent == 0
    assert store.remove("NEW@example.com") is not None


def test_bootstrap_says_in_one_line_what_to_run(aws, on_old_table):
    lines: list[str] = []
    provision.ensure_suppression_table(aws.dynamodb, OLD, lines.append)
    assert len(lines) == 1
    assert "old key schema (Address)" in lines[0]
    assert f"manage.py migrate_suppression_table --to {OLD}-v2" in lines[0]


def test_bootstrap_aws_carries_on_past_an_old_table(aws, on_old_table):
    out = io.StringIO()
    call_command("bootstrap_aws", stdout=out)
    lines = [line for line in out.getvalue().splitlines() if OLD in line]
    assert len(lines) == 1 and "migrate_suppression_table" in lines[0]
    assert "sender" in out.getvalue()  # the rest of the set-up ran


def test_the_migration_copies_every_entry_idempotently(aws, settings, on_old_table):
    out = io.StringIO()
    call_command("migrate_suppression_table", "--to", "new-suppression", stdout=out)
    assert "3 read, 3 copied, 0 already there" in out.getvalue()
    assert "SUPPRESSION_TABLE=new-suppression" in out.getvalue()
    for i, address in enumerate(on_old_table):
        item = go_get(aws, address, "new-suppression")
        assert item["Reason"]["S"] == ("bounce", "complaint", "manual")[i % 3]
        assert item["Detail"] == {"S": f"detail {i}"} and item["Source"] == {"S": f"evt-{i}"}
        assert datetime.fromisoformat(
            item["CreatedAt"]["S"].replace("Z", "+00:00")
        ).timestamp() == (NOW + i)
    again = io.StringIO()
    call_command("migrate_suppression_table", "--to", "new-suppression", stdout=again)
    assert "3 read, 0 copied, 3 already there" in again.getvalue()

    settings.SUPPRESSION_TABLE = "new-suppression"
    container.reset()
    assert container.current().suppression_list.get("OLD1@example.com").reason == "complaint"


def test_the_migration_refuses_to_write_into_an_old_shape_table(aws, on_old_table):
    with pytest.raises(Exception, match="not keyed by Email"):
        call_command("migrate_suppression_table", "--from", TABLE, "--to", OLD)
