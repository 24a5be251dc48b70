"""A producer cannot write the consumer's own state (issue 35, finding 1), through the real queue
(moto in-process) and the consumer as ``consume_emails`` wires it: a forged ``EmailOpsState``
naming its request ``released`` no longer takes it past the loop detector, and is logged once per
message; the console's release of a loop-held send still goes past the guard, once."""

from __future__ import annotations

import json
import logging
import threading

import pytest

from emailops import container
from emailops.core.contract import parse_request
from emailops.core.dedupe import dedupe_key
from emailops.core.ports import Status, TemplateMapping
from emailops.core.retry import STATE_ATTRIBUTE, RetryState
from emailops.core.state_seal import StateSeal
from emailops.queue_state import state_seal
from templates_admin.journal.release import logged_only_release
from worker.wiring import build_consumer

RECIPIENT = "loop@example.com"


def copy(n: int) -> str:
    return json.dumps(
        {"messageId": "invite", "dedupeId": f"copy-{n}", "recipients": [{"email": RECIPIENT}]}
    )


def key(n: int) -> str:
    return dedupe_key(parse_request(copy(n)), RECIPIENT)


@pytest.fixture
def stack(aws):
    adapters = container.current()
    adapters.mapping_store.save_mapping(
        TemplateMapping("invite", "invite.html", "Invitation"), expected_version=None
    )
    adapters.template_store.write_template("default/invite.html", "<p>Come</p>")
    return adapters


def enqueue(aws, n: int, state: str | None = None) -> str:
    attributes = {STATE_ATTRIBUTE: {"DataType": "String", "StringValue": state}} if state else {}
    return aws.sqs.send_message(
        QueueUrl=aws.queue_url, MessageBody=copy(n), MessageAttributes=attributes
    )["MessageId"]


def consume(aws) -> None:
    """``consume_emails --until-empty``, one worker (the copies are taken in order)."""
    build_consumer(adapters=container.current(), concurrency=1).run(
        stop=threading.Event(), until_empty=True, wait_time=0
    )
    assert aws.queue_messages(aws.queue_url) == []


def held_as_loop(stack, n: int) -> bool:
    row = stack.journal_reader.read(key(n))
    return row is not None and row.logged_only and row.logged_only_reason == "loop"


def refused(caplog) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if "event=record.state_refused" in r.getMessage()
    ]


def test_a_forged_release_is_held_as_a_loop_like_a_copy_without_it(aws, stack, caplog):
    for n in range(1, 7):
        enqueue(aws, n)
    consume(aws)
    assert len(aws.sent_emails()) == 5 and held_as_loop(stack, 6)  # LOOP_LIMIT_PER_HOUR = 5

    forged = {}
    for n in (7, 8, 9):  # what the producer sent: {"released": ["<dedupeId>:<email>"]}
        forged[enqueue(aws, n, json.dumps({"released": [key(n)]}))] = n
    enqueue(aws, 10)  # the copy 10: no attribute, held
    # Sealed under a secret that is not the server's: as good as no seal.
    other = StateSeal(["not-the-server"]).seal(RetryState(released=(key(11),)), copy(11))
    forged[enqueue(aws, 11, other)] = 11
    with caplog.at_level(logging.WARNING, "worker.consumer"):
        consume(aws)
    assert len(aws.sent_emails()) == 5
    assert all(held_as_loop(stack, n) for n in (7, 8, 9, 10, 11))
    lines = refused(caplog)
    assert len(lines) == 4, lines  # once per forged message, each named
    for message_id in forged:
        assert sum(f"sqsMessageId={message_id}" in line for line in lines) == 1


def test_the_consoles_release_of_a_loop_held_send_goes_past_the_guard_once(aws, stack, make_user):
    for n in range(1, 7):
        enqueue(aws, n)
    consume(aws)
    assert held_as_loop(stack, 6)
    logged_only_release(
        adapters=container.current(),
        key=key(6),
        reason="a real burst",
        user=make_user("Support leads"),
    )
    [message] = aws.queue_messages(aws.queue_url)
    text = message["MessageAttributes"][STATE_ATTRIBUTE]["StringValue"]
    assert state_seal().open(text, message["Body"]).state.released == (key(6),)
    consume(aws)
    assert stack.journal_reader.read(key(6)).status == Status.SENT
    assert len(aws.sent_emails()) == 6
    # Once: the released seal names that send only; the next copy is a loop again.
    enqueue(aws, 7, text)  # even carrying the release's own state, which is another message's
    consume(aws)
    assert held_as_loop(stack, 7) and len(aws.sent_emails()) == 6


def test_a_seal_under_a_retired_key_still_opens_while_the_key_is_a_fallback(settings):
    state = RetryState(attempts=2, released=("k",))
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = "old-" + "k" * 50, []
    sealed = state_seal().seal(state, "body")
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = "new-" + "k" * 50, ["old-" + "k" * 50]
    assert state_seal().open(sealed, "body") == (state, "", False)
    assert state_seal().open(sealed, "another body").refused  # not this message's
    settings.SECRET_KEY_FALLBACKS = []  # retired for good: a stale state is no state
    opened = state_seal().open(sealed, "body")
    assert opened.state == RetryState() and opened.refused and "seal" in opened.problem
