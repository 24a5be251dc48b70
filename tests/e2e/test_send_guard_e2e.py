"""The send guard on the moto server with two real ``consume_emails`` processes at once, against
the ``email-rate-counter`` table in the Go branch's shape (key ``Bucket``, TTL ``ExpiresAt``, as
``bootstrap_aws`` creates it). Each test counts in a table of its own, so their windows never mix.

The rate window is the Go consumer's fixed wall-clock minute, so the held-then-sent test waits for
the next minute to begin (about a minute); ``tests/aws/test_send_guard_on_aws.py`` drives the clock
through every window in-process."""

from __future__ import annotations

import json
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from emailops.aws.provision import ensure_rate_counter_table
from emailops.core.send_guard import global_bucket, window_start
from tests.e2e.test_consume_e2e import key_for
from tests.support.stack import wait_until

pytestmark = pytest.mark.e2e

GUARD_ON = {
    "SEND_RATE_LIMIT_PER_MINUTE": "5",
    "PER_MESSAGE_RATE_LIMIT_PER_MINUTE": "120",
    "LOOP_LIMIT_PER_HOUR": "0",
}


class AlertInbox:
    """A chat webhook on loopback: what ``ALERT_WEBHOOK_URL`` receives."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        inbox = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                inbox.texts.append(json.loads(self.rfile.read(length))["text"])
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def alerts() -> AlertInbox:
    inbox = AlertInbox()
    yield inbox
    inbox.server.shutdown()


@pytest.fixture(scope="module")
def e2e_stack_options(alerts) -> dict:
    return {"bucket": "emailops-guard-e2e", "extra_env": {"ALERT_WEBHOOK_URL": alerts.url}}


@pytest.fixture
def counter_table(e2e_stack) -> str:
    """A fresh rate counter table, created as bootstrap_aws creates the shared one."""
    name = f"email-rate-counter-{uuid.uuid4().hex[:8]}"
    ensure_rate_counter_table(e2e_stack.dynamodb, name, lambda line: None)
    return name


def request(address: str, n: int) -> dict:
    return {
        "messageId": "added-to-team",
        "recipients": [{"email": address}],
        "context": {"teamName": f"Team {n}", "administrator": "Dave"},
    }


def requests(prefix: str, count: int = 12) -> list[dict]:
    return [request(f"{prefix}{n}@example.com", n) for n in range(count)]


def two_consumers(stack, env: dict[str, str]) -> None:
    """Two ``consume_emails --until-empty`` processes at once, sharing the queue and the table."""
    with ThreadPoolExecutor(2) as pool:
        for run in [pool.submit(stack.consume, env=env) for _ in range(2)]:
            run.result()


def fresh_window(seconds_needed: int = 25) -> int:
    """The current rate window's start, once it has ``seconds_needed`` left (else the next's)."""
    now = time.time()
    if 60 - now % 60 < seconds_needed:
        start = window_start(now) + 60
        assert wait_until(lambda: time.time() >= start, timeout=seconds_needed + 1, interval=0.1)
    return window_start(time.time())


def count(stack, table: str, bucket: str) -> int:
    item = stack.item(table, {"Bucket": bucket})
    return int(item["Count"]) if item else 0


def sent_count(stack, prefix: str) -> int:
    return sum(
        1
        for email in stack.sent_emails()
        if any(to.startswith(prefix) for to in email.destinations.get("ToAddresses", []))
    )


def journal_row(stack, body: dict) -> dict | None:
    return stack.item(stack.journal_table, {"Id": key_for(body, body["recipients"][0]["email"])})


def held_on_queue(stack, expected: int) -> None:
    """The queue's depth settles at ``expected`` and nothing is dead-lettered. SQS's counts are
    approximate and a loaded machine can read a copy being refreshed or a batch delete still on
    its way (off by one for a moment): waited for, within a bound, rather than read once."""
    depths: list[int] = []
    settled = wait_until(lambda: depths.append(stack.depth()) or depths[-1] == expected, timeout=20)
    assert settled, f"queue depth {depths[-5:]}, expected {expected}"
    assert stack.depth(stack.dlq_url) == 0


@pytest.fixture(autouse=True)
def empty_queue(e2e_stack):
    yield
    e2e_stack.purge()


def test_two_consumers_send_five_in_the_minute_and_hold_the_rest(e2e_stack, counter_table):
    env = {**GUARD_ON, "RATE_LIMIT_TABLE": counter_table}
    window = fresh_window()
    e2e_stack.enqueue(requests("held"))
    two_consumers(e2e_stack, env)
    assert window_start(time.time()) == window, "the run outlasted its window"
    assert sent_count(e2e_stack, "held") == 5
    # The shared row shows the sends: a denial is not counted (Go's ADD 1 counts it) and what a
    # consumer reserved and did not spend it gave back as it stopped, so never over the cap.
    assert count(e2e_stack, counter_table, global_bucket(window)) == 5
    held_on_queue(e2e_stack, 7)  # held on the queue, unclaimed, not dead-lettered

    # The next minute: five more of the seven go, two wait for the minute after.
    assert wait_until(lambda: time.time() >= window + 61, timeout=75, interval=0.2)
    two_consumers(e2e_stack, env)
    assert sent_count(e2e_stack, "held") == 10
    assert count(e2e_stack, counter_table, global_bucket(window + 60)) == 5
    held_on_queue(e2e_stack, 2)
    rows = [row for row in (journal_row(e2e_stack, b) for b in requests("held")) if row]
    assert [row["Status"] for row in rows] == ["SENT"] * 10  # the two held have no row yet
    assert not any(row.get("LoggedOnly") for row in rows)


def test_with_log_only_the_seven_over_the_cap_are_journaled_log_only(e2e_stack, counter_table):
    env = {**GUARD_ON, "RATE_LIMIT_TABLE": counter_table, "RATE_SAFEGUARD_OVER_CAP": "log-only"}
    window = fresh_window()
    bodies = requests("logonly")
    e2e_stack.enqueue(bodies)
    two_consumers(e2e_stack, env)
    assert sent_count(e2e_stack, "logonly") == 5
    rows = [journal_row(e2e_stack, b) for b in bodies]
    logged = [row for row in rows if row.get("LoggedOnly")]
    assert len(logged) == 7
    assert {row["Status"] for row in logged} == {"SENT"}  # as Go journals it
    assert {row["LoggedOnlyReason"] for row in logged} == {"rate-safeguard"}
    assert not any("SesMessageId" in row for row in logged)
    assert count(e2e_stack, counter_table, global_bucket(window)) == 5  # the sends, not the denials
    held_on_queue(e2e_stack, 0)


def test_an_unreachable_counter_table_sends_nothing_and_loses_nothing(e2e_stack):
    env = {**GUARD_ON, "RATE_LIMIT_TABLE": "no-such-rate-table"}
    bodies = requests("nocounter")
    e2e_stack.enqueue(bodies)
    two_consumers(e2e_stack, env)
    assert sent_count(e2e_stack, "nocounter") == 0
    held_on_queue(e2e_stack, 12)
    assert not any(journal_row(e2e_stack, b) for b in bodies)


def test_a_loop_of_eight_sends_five_logs_three_and_alerts_once(e2e_stack, counter_table, alerts):
    env = {
        "SEND_RATE_LIMIT_PER_MINUTE": "0",
        "PER_MESSAGE_RATE_LIMIT_PER_MINUTE": "0",
        "LOOP_LIMIT_PER_HOUR": "5",
        "RATE_LIMIT_TABLE": counter_table,
    }
    bodies = [request("looped@example.com", n) for n in range(8)]  # context differs each time
    e2e_stack.enqueue(bodies)
    two_consumers(e2e_stack, env)
    assert len(e2e_stack.sent_to("looped@example.com")) == 5
    rows = [journal_row(e2e_stack, b) for b in bodies]
    reasons = [row["LoggedOnlyReason"] for row in rows if row.get("LoggedOnly")]
    assert reasons == ["loop"] * 3
    assert len(alerts.texts) == 1 and "added-to-team" in alerts.texts[0]
