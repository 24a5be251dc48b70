"""The events consumer against the send rate, on one stack: ``consume_emails`` sends ``--rows``
emails, then ``consume_ses_events`` (default flags both) takes ``--events`` mixed SES events for
those rows; events/s over emails/s is the ratio the issue asks for (target >= 3x).

    .venv/bin/python bench/events_throughput.py [--rows 500] [--events 2000] [--latency-ms 0]

moto server behind the fault proxy (tests/support/aws_proxy.py); rates are measured there, from
each process's first AWS call to its last send (emails) or its last DeleteMessageBatch (events), so
Python's start-up is left out. Per row, in random order: Send, Delivery, then a Bounce, a Complaint
or an Open, and one duplicate of any of them (SES delivers at least once). The journal's end state
is checked: every row has its three distinct events, the status their ranks say, and the bounced
and complaining addresses are suppressed. The machine is shared: figures are noisy; moto's CPU per
email and per event (from /proc) and the calls per operation are the steadier figures.

Both queues start equally deep: moto's ReceiveMessage costs time in proportion to the queue's depth
for every message it returns (real SQS does not), so 2,000 events queued at once would each pay 4x
what an email paid and the ratio would measure moto. The events go in rounds of ``--rows`` (one
``consume_ses_events --until-empty`` each, the same depth the sends started from), and the rate
is all events over the rounds' busy time. moto runs a process per service, as in
bench/consumer_concurrency.py (``--one-moto`` for one process).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import time
from collections import Counter
from pathlib import Path

import moto_env  # noqa: F401  (the project on sys.path, moto credentials, never real AWS)

from emailops.core.delivery_events import JOURNAL_KEY_TAG, RANK, DeliveryStatus
from tests.core.test_delivery_events import EVENTS, envelope
from tests.support.aws_proxy import AwsProxy, latency
from tests.support.stack import MotoPerService, MotoServer, Stack

TYPES = {"bounce.json": "BOUNCED", "complaint.json": "COMPLAINED", "open.json": None}


def event_for(name: str, row: dict, n: int) -> dict:
    event = json.loads((EVENTS / name).read_text())
    mail = event["mail"]
    mail["messageId"] = row["ses_id"]
    mail["destination"] = [row["recipient"]]
    mail["tags"][JOURNAL_KEY_TAG] = [row["tag"]]
    for part, field in (("bounce", "bouncedRecipients"), ("complaint", "complainedRecipients")):
        if part in event:
            event[part][field] = [{"emailAddress": row["recipient"]}]
    return event


def moto_cpu_seconds(moto: MotoServer | MotoPerService) -> float:
    """moto's CPU time so far (user + system, every process), from /proc (Linux)."""
    total = 0
    processes = moto.processes() if isinstance(moto, MotoPerService) else [moto.process]
    for process in processes:
        fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def run_until_done(stack: Stack, name: str, command: str, args: list[str]) -> str:
    process = stack.start_consumer(name, args, env={"SES_MAX_SEND_RATE": "0"}, command=command)
    code = process.wait(timeout=1200)
    if code != 0:
        raise SystemExit(f"{command} exited {code}:\n{process.output()[-3000:]}")
    return process.output()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=500)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--latency-ms", type=float, default=0)
    parser.add_argument("--one-moto", action="store_true", help="one moto process for all")
    args = parser.parse_args()
    per_row = max(1, args.events // args.rows)
    random.seed(18)
    moto = MotoServer() if args.one_moto else MotoPerService()
    proxy = AwsProxy(moto.url, routes=moto.routes()).start()
    stack = None
    try:
        stack = Stack(
            moto, endpoint=proxy.url, queue="bench-events-send", events_queue="bench-events"
        )
        if args.latency_ms:
            proxy.add(latency(args.latency_ms / 1000))
        stack.enqueue(
            {
                "messageId": "added-to-team",
                "recipients": [{"email": f"ev{i}@example.com"}],
                "context": {"teamName": f"Team {i}", "administrator": "Ada"},
            }
            for i in range(args.rows)
        )
        cpu = moto_cpu_seconds(moto)
        run_until_done(stack, "sender", "consume_emails", ["--until-empty", "--wait-time", "1"])
        send_cpu = moto_cpu_seconds(moto) - cpu
        calls = [c for c in proxy.records() if c.client == "sender"]
        sends = [c for c in calls if c.operation == "SendEmail" and c.accepted]
        send_ops = Counter(c.operation for c in calls)
        send_rate = len(sends) / (max(c.at for c in sends) - min(c.at for c in calls))
        rows = [
            {
                "ses_id": c.provider_id,
                "recipient": c.recipients[0],
                "tag": dict(c.tags)[JOURNAL_KEY_TAG],
            }
            for c in sends
        ]
        bodies, expected = [], {}
        for n, row in enumerate(rows):
            last = random.choice(list(TYPES))
            names = ["send.json", "delivery.json", last]
            names += random.choices(names, k=per_row - 3)
            random.shuffle(names)
            bodies += [
                envelope(event_for(name, row, n), message_id=f"sns-{n}-{i}")
                for i, name in enumerate(names)
            ]
            statuses = ["DELIVERED"] + ([TYPES[last]] if TYPES[last] else [])
            expected[row["tag"]] = (max(statuses, key=lambda s: RANK[DeliveryStatus(s)]), last)
        random.shuffle(bodies)
        url = stack.direct(stack.events_queue_url)
        wall = busy = events_cpu = 0.0
        events_log, calls = "", []
        for round_start in range(0, len(bodies), len(rows)):  # as deep as the sends started
            chunk = bodies[round_start : round_start + len(rows)]
            for start in range(0, len(chunk), 10):
                entries = [
                    {"Id": str(i), "MessageBody": b}
                    for i, b in enumerate(chunk[start : start + 10])
                ]
                stack.sqs.send_message_batch(QueueUrl=url, Entries=entries)
            name = f"events{round_start}"
            started, cpu = time.monotonic(), moto_cpu_seconds(moto)
            events_log += run_until_done(
                stack, name, "consume_ses_events", ["--until-empty", "--wait-time", "1"]
            )
            wall += time.monotonic() - started
            events_cpu += moto_cpu_seconds(moto) - cpu
            round_calls = [c for c in proxy.records() if c.client == name]
            deletes = [c for c in round_calls if c.operation == "DeleteMessageBatch"]
            busy += max(c.at for c in deletes) - min(c.at for c in round_calls)
            calls += round_calls
        events_rate = len(bodies) / busy
        ops = Counter(c.operation for c in calls)
        moto_ms = {
            op: sorted(c.upstream_seconds * 1000 for c in calls if c.operation == op) for op in ops
        }
        # The journal's end state.
        wrong = []
        items = stack.dynamodb.get_paginator("scan").paginate(TableName=stack.journal_table)
        seen = 0
        for page in items:
            for item in page["Items"]:
                key = base64.urlsafe_b64encode(item["Id"]["S"].encode()).decode().rstrip("=")
                if key not in expected:
                    continue
                seen += 1
                status, last = expected[key]
                got = item.get("DeliveryStatus", {}).get("S")
                events = item.get("DeliveryEvents", {}).get("L", [])
                if got != status or len(events) != 3:
                    wrong.append((item["Id"]["S"], got, status, len(events), last))
        suppressed = stack.dynamodb.scan(TableName="email-suppression", Select="COUNT")["Count"]
    finally:
        if stack:
            stack.close()
        proxy.stop()
        moto.stop()
    want_suppressed = sum(1 for _, last in expected.values() if last != "open.json")
    print(
        f"events consumer: {len(bodies)} mixed SES events for {len(rows)} sent rows, "
        f"{args.latency_ms:g} ms injected per AWS call, default flags, in rounds of {len(rows)} "
        "(noisy: shared 2-core machine)"
    )
    print(f"  consume_emails       {send_rate:8.1f} emails/s")
    print(
        f"  consume_ses_events   {events_rate:8.1f} events/s   ({events_rate / send_rate:.1f}x the "
        f"send rate, target >= 3x; process wall {wall:.1f} s)"
    )
    print(
        f"  moto CPU: {send_cpu * 1000 / len(rows):.1f} ms per email, "
        f"{events_cpu * 1000 / len(bodies):.1f} ms per event"
    )
    per_email = ", ".join(f"{op} {n / len(rows):.2f}" for op, n in send_ops.most_common())
    print(f"  AWS calls per email: {sum(send_ops.values()) / len(rows):.2f} ({per_email})")
    per_event = ", ".join(f"{op} {n / len(bodies):.3f}" for op, n in ops.most_common())
    print(f"  AWS calls per event: {sum(ops.values()) / len(bodies):.2f} ({per_event})")
    answer = ", ".join(f"{op} {ms[len(ms) // 2]:.0f}" for op, ms in moto_ms.items() if ms)
    print(f"  moto's answer time p50, ms (its own time, no injected latency): {answer}")
    verdict = "OK" if not wrong and seen == len(rows) and suppressed >= want_suppressed else "WRONG"
    print(
        f"  journal end state: {verdict}: {seen}/{len(rows)} rows checked, {len(wrong)} wrong, "
        f"{suppressed} suppressed (>= {want_suppressed} expected)"
    )
    for row in wrong[:5]:
        print(f"    {row}")
    if wrong:  # what the events consumer said about anything it did not delete
        print(
            *[f"    {line[:300]}" for line in events_log.splitlines() if "WARN" in line][:10],
            sep="\n",
        )


if __name__ == "__main__":
    main()
