"""Preferences end to end on moto's server, with two real ``consume_emails`` processes: a
categorised email reaches SES with the one-click headers; the recipient's one-click POST (the
real /u/<token> view, in a ``manage.py`` process on the same moto and console database) stops
every consumer's next send in that category within PREFERENCES_CACHE_SECONDS, journaled log-only
with the reason and no SES call; a critical email of the same category still goes."""

from __future__ import annotations

import email
import re
import time
from email.policy import default

import pytest

from tests.e2e.test_consume_e2e import key_for
from tests.support.stack import wait_until

pytestmark = pytest.mark.e2e

CACHE_SECONDS = 5  # PREFERENCES_CACHE_SECONDS, fixed (emailops/settings_catalog.py)
BASE = "https://emails.example.org"
ONE_CLICK = """
from django.test import Client
response = Client().post({path!r}, {{"List-Unsubscribe": "One-Click"}}, HTTP_HOST="localhost")
print(response.status_code)
"""


@pytest.fixture(scope="module")
def e2e_stack_options() -> dict:
    return {
        "bucket": "emailops-preferences-e2e",
        "extra_env": {"PUBLIC_BASE_URL": BASE},
    }


@pytest.fixture(scope="module")
def stack(e2e_stack, tmp_path_factory):
    """Two mappings of one template in the category: a normal one and a critical one; the
    console database the page reads labels from; two consumers running."""
    database = tmp_path_factory.mktemp("preferences-db") / "console.sqlite3"
    e2e_stack.env.update(e2e_stack.console_database(database))
    for message_id, priority in (("team-news", "normal"), ("team-reset", "critical")):
        e2e_stack.dynamodb.put_item(
            TableName="email-message-templates",
            Item={
                "MessageId": {"S": message_id},
                "TemplateFile": {"S": "added-to-team.html"},
                "Subject": {"S": "Team {{.teamName}}"},
                "Priority": {"S": priority},
                "Category": {"S": "team-news"},
            },
        )
    for name in ("one", "two"):
        e2e_stack.start_consumer(name, e2e_stack.consumer_args(concurrency=2, wait_time=1))
    return e2e_stack


def request(message_id: str, team: str) -> dict:
    return {
        "messageId": message_id,
        "recipients": [{"email": "pat@example.com"}],
        "context": {"teamName": team, "administrator": "Dave"},
    }


def consumed(stack, body: dict) -> dict:
    stack.enqueue([body])
    key = key_for(body, "pat@example.com")

    def settled() -> bool:
        row = stack.item(stack.journal_table, {"Id": key})
        return bool(row) and row["Status"] != "QUEUED"

    assert wait_until(settled, timeout=60)
    return stack.row(key)


def raw_message(stack, ses_id: str) -> email.message.EmailMessage:
    [sent] = [m for m in stack.sent_emails() if m.id == ses_id]
    return email.message_from_string(getattr(sent, "raw_data", ""), policy=default)


def test_one_click_stops_every_consumers_next_send_in_the_category(stack):
    first = consumed(stack, request("team-news", "First"))
    message = raw_message(stack, first["SesMessageId"])
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    url = re.fullmatch(r"<(.+)>", message["List-Unsubscribe"])[1]
    assert url.startswith(f"{BASE}/u/")

    clicked = time.time()
    path = url.removeprefix(BASE)
    assert stack.manage("shell", "-c", ONE_CLICK.format(path=path)).stdout.split()[-1] == "200"

    # Both consumers cached "subscribed" with the first send: within the cache's time, neither
    # sends again. Four requests, so that both consumers take some.
    assert wait_until(lambda: time.time() > clicked + CACHE_SECONDS, timeout=CACHE_SECONDS + 1)
    sent_before = len(stack.sent_to("pat@example.com"))
    rows = [consumed(stack, request("team-news", f"Later {n}")) for n in range(4)]
    assert [(r["Status"], r.get("LoggedOnly"), r["LoggedOnlyReason"]) for r in rows] == [
        ("SENT", True, "unsubscribed")
    ] * 4
    assert all("unsubscribed from team-news on " in r["LoggedOnlyDetail"] for r in rows)
    assert all("(one-click)" in r["LoggedOnlyDetail"] for r in rows)
    assert len(stack.sent_to("pat@example.com")) == sent_before  # SES never called

    critical = consumed(stack, request("team-reset", "Reset"))
    assert critical["Status"] == "SENT" and critical.get("SesMessageId")
    assert "List-Unsubscribe" not in raw_message(stack, critical["SesMessageId"])
