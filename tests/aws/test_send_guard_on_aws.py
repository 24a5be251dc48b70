"""The send guard over the real adapters (in-process moto): two "consumers" (two pipelines over
one journal and one ``email-rate-counter`` table) and a queue simulated by a list whose records
come back when their WAIT ends; the clock is driven, never slept."""

from __future__ import annotations

import json

import pytest

from emailops import container
from emailops.aws.rate_counter import DynamoRateCounters
from emailops.core.contract import parse_request
from emailops.core.dedupe import dedupe_key
from emailops.core.log_only import LogOnlyReason
from emailops.core.pipeline import Action, EmailPipeline, PipelineSettings
from emailops.core.ports import TemplateMapping
from emailops.core.send_guard import OverCap, Safeguard, global_bucket, message_bucket
from emailops.pipeline_build import send_policies

START = 1_750_000_020  # 20 s into a one-minute window
WINDOW = START - START % 60
TABLE = "email-rate-counter"


class Clock:
    def __init__(self) -> None:
        self.now = float(START)

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def stack(aws):
    adapters = container.current()
    adapters.mapping_store.save_mapping(
        TemplateMapping("invite", "invite.html", "Invitation"), expected_version=None
    )
    adapters.template_store.write_template("default/invite.html", "<p>Come, {{.n}}</p>")
    return adapters


def consumers(stack, clock, alerts=None, *, table=TABLE, **caps) -> list[EmailPipeline]:
    def one() -> EmailPipeline:
        guard = Safeguard(
            counters=DynamoRateCounters(stack.client("dynamodb"), table),
            alert=(alerts if alerts is not None else []).append,
            **{"global_cap": 5, "message_cap": 120, **caps},
        )
        return EmailPipeline(
            composer=stack.composer(),
            journal=stack.journal,
            sender=stack.sender,
            settings=PipelineSettings(from_address="Pennsieve <support@pennsieve.test>"),
            policies=send_policies(send_guard=guard),
            clock=clock,
        )

    return [one(), one()]


def body(n: int, recipient: str = "") -> str:
    email = recipient or f"person{n}@example.com"
    return json.dumps(
        {"messageId": "invite", "recipients": [{"name": "", "email": email}], "context": {"n": n}}
    )


def run(pipelines, clock, bodies, *, until: float, after=lambda: None) -> dict[int, int]:
    """Deliver ``bodies`` to the consumers in turn, each record again when its WAIT ends, until
    ``until``: the sends counted per window. ``after`` runs after each record."""
    queue = [(clock.now, b) for b in bodies]
    sent_by_window: dict[int, int] = {}
    turn = 0
    while queue and clock.now < until:
        ready = [item for item in queue if item[0] <= clock.now]
        if not ready:
            clock.now = min(at for at, _ in queue)
            continue
        for item in ready:
            queue.remove(item)
            outcome = pipelines[turn % 2].process(item[1])
            turn += 1
            window = int(clock.now) - int(clock.now) % 60
            sent_by_window[window] = sent_by_window.get(window, 0) + outcome.sent
            if outcome.action is Action.WAIT:
                queue.append((outcome.wait_until, item[1]))
            else:
                assert outcome.action is Action.DELETE, outcome
            after()
        for pipeline in pipelines:  # as each consumer does every second
            pipeline.flush_counters()
        clock.now += 1
    assert not queue, f"still queued: {len(queue)}"
    return sent_by_window


def count(stack, bucket: str) -> int:
    item = stack.client("dynamodb").get_item(TableName=TABLE, Key={"Bucket": {"S": bucket}})
    return int(item["Item"]["Count"]["N"]) if "Item" in item else 0


def test_two_consumers_send_five_a_minute_and_hold_the_rest_for_later_windows(aws, stack):
    clock = Clock()
    sent = run(consumers(stack, clock), clock, [body(n) for n in range(12)], until=START + 600)
    assert sent == {WINDOW: 5, WINDOW + 60: 5, WINDOW + 120: 2}
    assert len(aws.sent_emails()) == 12  # held, never dropped
    # The row shows the sends: a denial is not counted (Go's ADD 1 counts it), so it never
    # goes over the cap by our writes.
    assert [count(stack, global_bucket(WINDOW + 60 * i)) for i in range(3)] == [5, 5, 2]
    item = stack.client("dynamodb").get_item(
        TableName=TABLE, Key={"Bucket": {"S": global_bucket(WINDOW)}}
    )["Item"]
    assert int(item["ExpiresAt"]["N"]) == START + 120  # first count + 2 windows


def test_with_log_only_the_seven_over_the_cap_are_journaled_log_only(aws, stack):
    clock = Clock()
    pipelines = consumers(stack, clock, over_cap=OverCap.LOG_ONLY)
    bodies = [body(n) for n in range(12)]
    run(pipelines, clock, bodies, until=START + 30)
    assert len(aws.sent_emails()) == 5
    rows = [
        stack.journal.read(dedupe_key(parse_request(b), f"person{n}@example.com"))
        for n, b in enumerate(bodies)
    ]
    logged = [row for row in rows if row.logged_only]
    assert len(logged) == 7
    assert {row.logged_only_reason for row in logged} == {LogOnlyReason.RATE_SAFEGUARD.value}


def test_an_unreachable_counter_table_sends_nothing_and_loses_nothing(aws, stack):
    clock = Clock()
    broken = consumers(stack, clock, table="no-such-table")
    queue = [body(n) for n in range(12)]
    outcomes = [broken[n % 2].process(b) for n, b in enumerate(queue)]
    assert {o.action for o in outcomes} == {Action.WAIT}
    assert aws.sent_emails() == []
    # The table is back: every record is sent, still five a minute.
    clock.now = WINDOW + 60
    sent = run(consumers(stack, clock), clock, queue, until=WINDOW + 600)
    assert sent == {WINDOW + 60: 5, WINDOW + 120: 5, WINDOW + 180: 2}
    assert len(aws.sent_emails()) == 12


def test_a_loop_of_eight_sends_five_logs_three_and_alerts_once(aws, stack):
    clock = Clock()
    alerts: list[str] = []
    pipelines = consumers(stack, clock, alerts, global_cap=0, message_cap=0, loop_limit=5)
    bodies = [body(n, recipient="pat@example.com") for n in range(8)]
    outcomes = [pipelines[n % 2].process(b) for n, b in enumerate(bodies)]
    assert {o.action for o in outcomes} == {Action.DELETE}
    assert len(aws.sent_emails()) == 5
    rows = [stack.journal.read(dedupe_key(parse_request(b), "pat@example.com")) for b in bodies]
    assert [row.logged_only_reason for row in rows if row.logged_only] == ["loop"] * 3
    assert len(alerts) == 1 and "invite" in alerts[0]
    # The address is never stored in clear in the counter table.
    scan = stack.client("dynamodb").scan(TableName=TABLE)["Items"]
    assert "pat@example.com" not in json.dumps(scan)


def test_two_consumers_reserving_blocks_never_take_the_row_over_the_cap(aws, stack):
    """A cap of 30: each consumer reserves 3 sends a call. The shared row is read after every
    record: never over 30; once the consumers stop it shows exactly the sends of each window,
    and every request went out once."""
    clock = Clock()
    pipelines = consumers(stack, clock, global_cap=0, message_cap=30)
    rows: dict[str, int] = {}

    def look() -> None:
        window = int(clock.now) - int(clock.now) % 60
        bucket = message_bucket("invite", window)
        rows[bucket] = max(rows.get(bucket, 0), count(stack, bucket))

    reservations = []

    def counted(params, **_) -> None:
        if params.get("Key", {}).get("Bucket", {}).get("S", "").startswith("msg#"):
            reservations.append(params)

    stack.client("dynamodb").meta.events.register(
        "before-parameter-build.dynamodb.UpdateItem", counted
    )
    bodies = [body(n) for n in range(45)]
    sent = run(pipelines, clock, bodies, until=START + 600, after=look)
    for pipeline in pipelines:
        pipeline.flush_counters(stopping=True)
    assert sent == {WINDOW: 30, WINDOW + 60: 15}
    assert max(rows.values()) == 30
    assert {w: count(stack, message_bucket("invite", w)) for w in sent} == sent
    addresses = [to for email in aws.sent_emails() for to in email.destinations["ToAddresses"]]
    assert len(addresses) == 45 and len(set(addresses)) == 45  # none lost, none twice
    assert len(reservations) < 45 / 2  # blocks of 3, not a call a send


def test_the_go_consumers_add_one_on_the_same_row_stays_within_the_cap(aws, stack):
    """Go counts each send with ADD 1 and sends while the new count is at most the cap; ours
    and its sends together never pass the cap in a window."""
    clock = Clock()
    pipelines = consumers(stack, clock, global_cap=0, message_cap=20)
    go = DynamoRateCounters(stack.client("dynamodb"), TABLE)
    go_sent: dict[int, int] = {}

    def go_sends() -> None:
        window = int(clock.now) - int(clock.now) % 60
        if go.increment(message_bucket("invite", window), expires_at=int(clock.now) + 120) <= 20:
            go_sent[window] = go_sent.get(window, 0) + 1

    sent = run(pipelines, clock, [body(n) for n in range(24)], until=START + 600, after=go_sends)
    assert len(aws.sent_emails()) == 24
    for window in sent.keys() | go_sent.keys():
        assert sent.get(window, 0) + go_sent.get(window, 0) <= 20, window
    assert sum(go_sent.values()) > 0
