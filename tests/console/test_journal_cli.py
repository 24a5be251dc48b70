"""manage.py email_log: the console's search from the command line."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from templates_admin.journal import selectors
from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = pytest.mark.django_db


def email_log(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("email_log", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def rows(aws):
    rows = [
        journal_row(
            "Fay@Example.com",
            at=BASE_TIME + i,
            message_id="dataset-publication-accepted" if i % 3 == 0 else "added-to-team",
            status="FAILED" if i == 4 else "SENT",
            Context={"teamName": "Curators", "resetToken": "hunter2"},
            **(
                {
                    "Error": "send email [fay@example.com]: MessageRejected: bad address",
                    "ErrorKind": "SendRejected",
                    "Permanent": True,
                }
                if i == 4
                else {}
            ),
        )
        for i in range(7)
    ]
    put_rows(aws.dynamodb, "email-journal", rows)
    return rows


def test_recipient_prints_a_table_newest_first(rows):
    out, _ = email_log("recipient", "fay@example.com")

    lines = out.splitlines()
    assert lines[0].split()[:4] == ["TIME", "STATUS", "DELIVERY", "MESSAGE"]
    assert [line.split()[-1] for line in lines[1:8]] == [r["Id"] for r in reversed(rows)]
    assert "MessageRejected" in out and "default" in out
    assert lines[-1].startswith("7 rows")


def test_recipient_json_is_one_object_per_line_keyed_by_attribute(rows):
    out, _ = email_log("recipient", "FAY@example.com", "--json", "--limit", "3", "--oldest-first")

    objects = [json.loads(line) for line in out.splitlines()]
    assert [o["Id"] for o in objects] == [r["Id"] for r in rows[:3]]
    assert {"Id", "MessageId", "Recipient", "Status", "Timestamp", "SentAtKey"} <= set(objects[0])
    assert objects[0]["Context"] == {"teamName": "Curators", "resetToken": "••••••"}


def test_recipient_filters_and_limit_across_pages(rows):
    out, _ = email_log(
        "recipient",
        "fay@example.com",
        "--message-id",
        "added-to-team",
        "--status",
        "sent",
        "--json",
    )
    found = [json.loads(line) for line in out.splitlines()]
    assert {(r["MessageId"], r["Status"]) for r in found} == {("added-to-team", "SENT")}
    assert len(found) == 3  # i = 1, 2, 5

    limited, _ = email_log("recipient", "fay@example.com", "--limit", "2")
    assert "2 rows (more: raise --limit)" in limited


def test_recipient_without_limit_prints_every_row_across_pages(aws):
    # More rows than one selector page (MAX_LIMIT): the command must follow the cursor.
    count = selectors.MAX_LIMIT + 20
    put_rows(
        aws.dynamodb,
        "email-journal",
        [journal_row("many@example.com", at=BASE_TIME + i) for i in range(count)],
    )

    as_json, err = email_log("recipient", "many@example.com", "--json")
    table, _ = email_log("recipient", "many@example.com")
    limited, _ = email_log("recipient", "many@example.com", "--json", "--limit", "7")
    _, limited_err = email_log("recipient", "many@example.com", "--json", "--limit", "7")

    ids = [json.loads(line)["Id"] for line in as_json.splitlines()]
    assert len(ids) == count == len(set(ids)) and err == ""
    assert table.splitlines()[-1].startswith(f"{count} rows;")
    assert "more" not in table.splitlines()[-1]
    assert len(limited.splitlines()) == 7
    assert "7 rows shown; more match" in limited_err


def test_delivery_outcome_in_the_table_the_json_and_the_explanation(aws):
    bounced = journal_row(
        "gus@example.com",
        at=BASE_TIME,
        DeliveryStatus="BOUNCED",
        DeliveryStatusAt="2026-05-28T20:30:00.000Z",
        BounceType="Permanent",
        BounceSubType="General",
        DiagnosticCode="smtp; 550 5.1.1 <gus@example.com>: Recipient address rejected: user unknown",
        DeliveryEvents=[
            {"Type": "Send", "At": "2026-05-28T20:26:41.000Z", "Id": "e1", "Summary": "sent"},
            {"Type": "Bounce", "At": "2026-05-28T20:30:00.000Z", "Id": "e2",
             "Summary": "permanent bounce: user unknown"},
        ],
    )  # fmt: skip
    delivered = journal_row(
        "gus@example.com",
        at=BASE_TIME + 1,
        DeliveryStatus="DELIVERED",
        DeliveryStatusAt="2026-05-28T20:27:00.000Z",
    )
    pending = journal_row("gus@example.com", at=BASE_TIME + 2)
    put_rows(aws.dynamodb, "email-journal", [bounced, delivered, pending])

    table, _ = email_log("recipient", "gus@example.com")
    as_json, _ = email_log("recipient", "gus@example.com", "--json")
    only_bounced, _ = email_log("recipient", "gus@example.com", "--json", "--delivery", "bounced")
    no_report, _ = email_log("recipient", "gus@example.com", "--json", "--delivery", "none")
    explained, _ = email_log("id", bounced["Id"])

    lines = table.splitlines()
    assert "accepted by SES, no delivery report" in lines[1]
    assert "delivered" in lines[2]
    assert "bounced: mailbox does not exist" in lines[3]
    outcomes = [json.loads(line)["DeliveryOutcome"] for line in as_json.splitlines()]
    assert outcomes == [
        "accepted by SES, no delivery report yet",
        "delivered",
        "bounced: mailbox does not exist",
    ]
    assert [json.loads(line)["Id"] for line in only_bounced.splitlines()] == [bounced["Id"]]
    assert [json.loads(line)["Id"] for line in no_report.splitlines()] == [pending["Id"]]
    assert explained.startswith("Bounced: mailbox does not exist.")
    assert "Bounce: permanent bounce: user unknown" in explained
    assert "550 5.1.1" in explained


def test_recipient_date_range(rows):
    out, _ = email_log(
        "recipient", "fay@example.com", "--json",
        "--since", "2026-05-28T20:26:42+00:00", "--until", "2026-05-28T20:26:44+00:00",
    )  # fmt: skip
    assert [json.loads(line)["Timestamp"] for line in out.splitlines()] == [
        BASE_TIME + 4,
        BASE_TIME + 3,
        BASE_TIME + 2,
    ]


def test_latest_explains_the_newest_row(rows):
    out, _ = email_log("latest", "fay@example.com")

    assert out.startswith("Accepted by SES at")
    assert rows[-1]["Id"] in out and "hunter2" not in out


def test_id_explains_one_row_and_finds_ses_ids_too(rows):
    failed = rows[4]
    out, _ = email_log("id", failed["Id"])
    assert out.startswith("Failed permanently: send email")
    assert "moved to the dead-letter queue; redrive it to retry" in out

    by_ses, _ = email_log("id", rows[0]["SesMessageId"], "--json")
    assert json.loads(by_ses)["Id"] == rows[0]["Id"]


def test_no_rows_is_said_plainly_and_exits_zero(aws):
    out, _ = email_log("recipient", "nobody@example.com")
    assert out.startswith("no rows for nobody@example.com")
    assert "RecipientKeySentAtIndex" in out and "never queued" in out

    json_out, json_err = email_log("id", "f" * 64, "--json")
    assert json_out == "" and "no row has Id" in json_err


def test_rows_hidden_by_a_filter_are_not_called_never_queued(rows):
    address = rows[0]["Recipient"]
    out, _ = email_log("recipient", address, "--status", "SUPPRESSED")

    assert "The filters hid" in out and "never queued" not in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["recipient", "fay@example.com", "--status", "bounced"], "status must be one of"),
        (["recipient", "fay@example.com", "--delivery", "lost"], "delivery must be one of"),
        (["recipient", "not-an-address"], "is not an email address"),
        (["latest", "a:b@example.com"], "is not an email address"),
        (["recipient", "fay@example.com", "--limit", "0"], "--limit must be at least 1"),
        (["recipient", "fay@example.com", "--since", "yesterday"], "is not a date"),
        (["id", "fay@example.com"], "use `email_log recipient"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_arguments_fail_with_a_clear_message(aws, args, message):
    with pytest.raises(CommandError, match=message):
        email_log(*args)
