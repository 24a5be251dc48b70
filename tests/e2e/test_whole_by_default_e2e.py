"""Issue 31's "done when", as a new user would try it: `make run` (the real `manage.py devstack`, with
no setting at all), then in another shell the printed lines plus `webhooks add <loopback
receiver>`, and one queued email: the receiver gets a signed `email.sent`."""

from __future__ import annotations

import json
import shlex
import subprocess
import time

import pytest
from standardwebhooks.webhooks import Webhook

from tests.conftest import skip_or_fail
from tests.support.devstack import running_devstack
from tests.support.stack import wait_until
from tests.webhooks.conftest import Receiver
from tests.worker.test_tasks import redis_available
from worker.management.commands.devstack import try_it

pytestmark = pytest.mark.e2e


def in_another_shell(stack, lines: list[str]) -> subprocess.CompletedProcess:
    """``lines`` in bash, as pasted in a fresh shell of the same user (no setting of the test's)."""
    return subprocess.run(
        ["bash", "-c", "set -e\n" + "\n".join(lines)],
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_make_run_then_webhooks_add_and_one_email_delivers_a_signed_email_sent(tmp_path):
    if not redis_available():
        skip_or_fail("Redis is not listening on 127.0.0.1:6379 (the stack's Celery broker)")
    receiver = Receiver()
    try:
        with running_devstack(tmp_path) as stack:
            cd, source, enqueue = try_it(stack.env_file, tmp_path).strip().splitlines()
            python, manage = shlex.split(enqueue)[:2]
            # The webhook worker says it is there once it is ready: then `add` warns of nothing.
            node = f"webhooks-{stack.port}@"

            def ready() -> bool:
                return any(
                    node in line and " ready." in line for line in stack.celery_log().splitlines()
                )

            assert wait_until(ready, timeout=60), stack.celery_log()
            added = in_another_shell(
                stack, [cd, source, f"{python} {manage} webhooks add {receiver.url} --json"]
            )
            assert added.returncode == 0, added.stderr
            assert "warning:" not in added.stderr, added.stderr
            secret = json.loads(added.stdout)["secret"]

            began = time.monotonic()
            queued = in_another_shell(stack, [cd, source, enqueue])
            assert queued.returncode == 0, queued.stderr

            def sent() -> dict[str, dict]:
                """The signed email.sent events by webhook-id: delivery is at least once, so a
                redelivery (same id) is the same event, never a second one."""
                events = {}
                for headers, body in list(receiver.received):
                    event = Webhook(secret).verify(body, headers)
                    if event["type"] == "email.sent":
                        events[headers["webhook-id"]] = event
                return events

            # The wake-up is immediate; a lost one is the outbox sweep's (every 10 s, after 5 s).
            assert wait_until(lambda: bool(sent()), timeout=60), (
                f"{receiver.received}\n{stack.output()}\n{stack.celery_log()}"
            )
            (event,) = sent().values()
            assert event["data"]["messageId"] == "added-to-team"
            assert event["data"]["recipient"] == "you@example.com"
            print(f"queued → signed email.sent in {time.monotonic() - began:.1f} s")
    finally:
        receiver.close()
