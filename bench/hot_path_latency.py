"""The hot path with the send guard on: enqueue → SES latency, CPU and AWS calls per email, our
consumer (default flags) against a sequential reference (``--concurrency 1``), side by side in one
run; then two of our consumers with the caps binding.

    .venv/bin/python bench/hot_path_latency.py [--rate 8] [--seconds 30] [--latency-ms 20]
                                               [--binding-seconds 70] [--profile 0]

moto runs a process per service behind the fault proxy (tests/support/aws_proxy.py, in this
process), which adds ``--latency-ms`` to every AWS call. One messageId (``added-to-team``), one
recipient per request, enqueued straight to moto at ``--rate`` a second, each its own address.

- enqueue → SES: from just before the request's SendMessage to when its SES SendEmail reached the
  proxy (so half the injected latency of the send itself is in it, as a real SES's would be).
- CPU per email: the consumer process's CPU (from /proc) over the measured stretch, after a warm-up,
  divided by the emails it sent in that stretch (its start-up is not in it).
- calls per email: the proxy's records of that consumer over the stretch, per owner: the policies'
  tables (suppression, preferences, the send guard's rate-counter by bucket kind), the journal's
  claim and marks, SES, SQS (receive/delete batches).

Caps not binding: ``SEND_RATE_LIMIT_PER_MINUTE`` and ``PER_MESSAGE_RATE_LIMIT_PER_MINUTE`` set far
above the rate (the counters are still counted: the costly case), the loop detector on at its
default. Caps binding: the per-messageId cap (``--binding-cap``, default 120 as Go's) below the rate,
two consumers side by side: per window, the shared counter row and the sends seen at the proxy must
not exceed the cap, no address is sent twice, and every request is sent or still queued.

``--profile N`` runs our consumer under cProfile (CONSUMER_PROFILE) and prints its top N functions.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pstats
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import moto_env  # noqa: F401  (the project on sys.path, moto credentials, never real AWS)

from tests.support.aws_proxy import AwsProxy, Call, latency
from tests.support.stack import (
    ACCOUNT,
    MANAGE,
    ChildProcess,
    MotoPerService,
    Stack,
    wait_until,
)

MESSAGE_ID = "added-to-team"
RATE_TABLE = "email-rate-counter"
NOT_BINDING = "1000000"


def request(address: str, i: int) -> dict:
    return {
        "messageId": MESSAGE_ID,
        "recipients": [{"email": address}],
        "context": {"teamName": f"Team {i}", "administrator": "Ada"},
    }


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Producer:
    """Sends one request per SendMessage at ``rate`` a second to each queue given, the same tick
    for all (their order turned each tick); remembers when each was sent."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.sent_at: dict[str, float] = {}
        self.count = 0

    def run(self, queues: dict[str, str], rate: float, seconds: float, tag: str = "") -> dict:
        """``queues``: name → URL as moto knows it. The addresses sent, per name."""
        addresses: dict[str, list[str]] = {name: [] for name in queues}
        order = list(queues)
        start = time.perf_counter()
        for i in range(int(rate * seconds)):
            due = start + i / rate
            if (pause := due - time.perf_counter()) > 0:
                time.sleep(pause)
            self.count += 1
            order = order[1:] + order[:1]
            for name in order:
                address = f"{name}{tag}-{self.count}@example.com"
                body = json.dumps(request(address, self.count))
                self.sent_at[address] = time.time()
                self.stack.sqs.send_message(QueueUrl=queues[name], MessageBody=body)
                addresses[name].append(address)
        return addresses


def sends_of(calls: list[Call]) -> dict[str, Call]:
    found: dict[str, Call] = {}
    for call in calls:
        if call.service == "ses" and call.operation == "SendEmail" and call.accepted:
            for address in call.recipients:
                found.setdefault(address, call)
    return found


def owner(call: Call) -> str:
    """Which step a call is the cost of."""
    if call.service == "ses":
        return "SES send"
    if call.service == "sqs":
        return f"SQS {call.operation}"
    table = call.table
    if table == RATE_TABLE:
        kind = call.key.split("#", 1)[0]
        return {"loop": "guard: loop detector", "hold": "guard: hold record"}.get(
            kind, "guard: rate counters"
        )
    if "suppression" in table:
        return "policy: suppression"
    if "preferences" in table:
        return "policy: unsubscribed"
    if "tombstone" in table:
        return "tombstones"
    if table.endswith("journal") or "journal" in table:
        if call.sets_status == "SENT":
            return "journal: mark"
        return f"journal: {call.operation}"
    return f"{call.service} {table} {call.operation}"


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class Entrant:
    name: str
    concurrency: int | None  # None: the defaults; 1: the sequential reference
    root: Path | None = None  # another checkout's consumer (--before)
    profile: Path | None = None  # every thread under cProfile (its overhead in its CPU)
    queue: str = ""  # as moto knows it
    consumer: ChildProcess | None = None


def start(stack: Stack, entrant: Entrant, env: dict[str, str]) -> None:
    """The entrant's consumer on a queue of its own, through the proxy."""
    name = entrant.name
    dlq = stack.sqs.create_queue(QueueName=f"bench-hot-{name}-dlq")["QueueUrl"]
    arn = stack.sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])
    redrive = json.dumps(
        {"deadLetterTargetArn": arn["Attributes"]["QueueArn"], "maxReceiveCount": "5"}
    )
    created = stack.sqs.create_queue(
        QueueName=f"bench-hot-{name}",
        Attributes={"VisibilityTimeout": "60", "RedrivePolicy": redrive},
    )
    entrant.queue = created["QueueUrl"]
    env = {
        "SES_MAX_SEND_RATE": "0",
        **env,
        "EMAIL_SERVICE_QUEUE_URL": f"{stack.endpoint}/{ACCOUNT}/bench-hot-{name}",
        "AWS_SDK_UA_APP_ID": name,
    }
    flags = stack.consumer_args(concurrency=entrant.concurrency)
    if entrant.root is not None:
        argv = [sys.executable, str(entrant.root / "manage.py"), "consume_emails", *flags]
        env["PYTHONPATH"] = str(entrant.root)
    elif entrant.profile is not None:
        argv = [sys.executable, str(Path(__file__).with_name("profiled_consumer.py"))]
        argv += [str(entrant.profile), "consume_emails", *flags]
    else:
        argv = [*MANAGE, "consume_emails", *flags]
    entrant.consumer = stack.start_process(name, argv, env=env)


def side_by_side(
    stack: Stack,
    proxy: AwsProxy,
    producer: Producer,
    entrants: list[Entrant],
    args: argparse.Namespace,
    env: dict[str, str],
) -> dict[str, dict]:
    """Every entrant at once, each on its own queue, fed the same requests at the same ticks:
    the machine's load, whatever it is, is the same for all. A warm-up, then the stretch."""
    for entrant in entrants:
        start(stack, entrant, env)
    queues = {e.name: e.queue for e in entrants}
    warm = producer.run(queues, args.rate, 3, tag="-warm")
    every = {a for sent in warm.values() for a in sent}
    if not wait_until(lambda: every <= sends_of(proxy.records()).keys(), timeout=180):
        tails = "\n".join(e.consumer.output()[-1500:] for e in entrants if e.consumer)
        raise SystemExit(f"warm-up not sent:\n{tails}")
    cpu0 = {e.name: cpu_seconds(e.consumer.pid) for e in entrants if e.consumer}
    t0 = time.time()
    measured = producer.run(queues, args.rate, args.seconds)
    keeping_up = {
        a for e in entrants if e.concurrency != 1 for a in measured[e.name]
    }  # the sequential one falls behind: not waited for
    wait_until(lambda: keeping_up <= sends_of(proxy.records()).keys(), timeout=60)
    cpu1 = {e.name: cpu_seconds(e.consumer.pid) for e in entrants if e.consumer}
    t1 = time.time()
    for entrant in entrants:
        if entrant.consumer:
            entrant.consumer.terminate(timeout=30)
    records = proxy.records()
    results = {}
    for entrant in entrants:
        name = entrant.name
        calls = [c for c in records if c.client == name and t0 <= c.at <= t1]
        sends = sends_of(calls)
        sent = [a for a in measured[name] if a in sends]
        latencies = [(sends[a].arrived - producer.sent_at[a]) * 1000 for a in sent]
        per_email = max(1, len(sends))
        results[name] = {
            "sent": len(sent),
            "enqueued": len(measured[name]),
            "p50": percentile(latencies, 0.5),
            "p99": percentile(latencies, 0.99),
            "cpu_ms": (cpu1[name] - cpu0[name]) * 1000 / per_email,
            "calls": {k: v / per_email for k, v in collections.Counter(map(owner, calls)).items()},
            "steady": sum(1 for c in calls if c.service in ("dynamodb", "ses")) / per_email,
        }
    return results


def binding(stack: Stack, proxy: AwsProxy, producer: Producer, args: argparse.Namespace) -> dict:
    """Two of our consumers, the per-messageId cap below the rate."""
    stack.purge()
    env = {
        "SES_MAX_SEND_RATE": "0",
        "SEND_RATE_LIMIT_PER_MINUTE": NOT_BINDING,
        "PER_MESSAGE_RATE_LIMIT_PER_MINUTE": str(args.binding_cap),
        "LOOP_LIMIT_PER_HOUR": "5",
    }
    names = ("capA", "capB")
    consumers = [stack.start_consumer(n, stack.consumer_args(), env=env) for n in names]
    time.sleep(3)  # both up (their start-up is not what is measured)
    t0 = time.time()
    measured = producer.run({"cap": stack.direct(stack.queue_url)}, args.rate, args.binding_seconds)
    measured = measured["cap"]
    # Let what was allowed go out before the stop (a loaded machine sends seconds after the
    # check): until no send for 5 s, within a bound.
    seen = [0, time.time()]

    def quiet() -> bool:
        n = sum(1 for c in proxy.records() if c.client in names and c.operation == "SendEmail")
        if n != seen[0]:
            seen[:] = [n, time.time()]
        return time.time() - seen[1] > 5

    wait_until(quiet, timeout=60, interval=0.5)
    for consumer in consumers:
        consumer.terminate(timeout=30)
    calls = [c for c in proxy.records() if c.client in names and c.at >= t0]
    sends = [c for c in calls if c.service == "ses" and c.operation == "SendEmail" and c.accepted]
    per_address = collections.Counter(a for c in sends for a in c.recipients)
    twice = sum(1 for n in per_address.values() if n > 1)
    windows = collections.Counter(int(c.arrived) - int(c.arrived) % 60 for c in sends)
    rows = {}
    for start in sorted(windows):
        item = stack.item(RATE_TABLE, {"Bucket": f"msg#{MESSAGE_ID}#{start}"})
        rows[start] = int((item or {}).get("Count", 0))
    wait_until(lambda: stack.depth() >= len(measured) - len(per_address), timeout=30)
    queued = stack.depth()
    return {
        "cap": args.binding_cap,
        "enqueued": len(measured),
        "sent": len(per_address),
        "twice": twice,
        "queued": queued,
        "windows": dict(windows),
        "rows": rows,
        "by_consumer": collections.Counter(c.client for c in sends),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=8)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--latency-ms", type=float, default=20)
    parser.add_argument("--binding-seconds", type=float, default=70)
    parser.add_argument("--binding-cap", type=int, default=120)
    parser.add_argument("--profile", type=int, default=0, help="top N of our consumer's profile")
    parser.add_argument(
        "--before", default="", help="another checkout (e.g. main's worktree) run the same way"
    )
    parser.add_argument(
        "--only", default="", help="run only these of ours,seq,bours,bseq (less load at once)"
    )
    parser.add_argument("--sort", default="tottime", help="pstats order: tottime, cumulative")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    moto = MotoPerService()
    proxy = AwsProxy(moto.url, routes=moto.routes()).start()
    stack = None
    profile = Path(tempfile.mkdtemp(prefix="hot-path-")) / "consumer.prof"
    guard = {
        "SEND_RATE_LIMIT_PER_MINUTE": NOT_BINDING,
        "PER_MESSAGE_RATE_LIMIT_PER_MINUTE": NOT_BINDING,
        "LOOP_LIMIT_PER_HOUR": "5",
    }
    try:
        stack = Stack(moto, endpoint=proxy.url, queue="bench-hot-path", visibility_timeout=60)
        proxy.add(latency(args.latency_ms / 1000))
        producer = Producer(stack)
        entrants = [Entrant("ours", None), Entrant("seq", 1)]
        if args.before:
            root = Path(args.before).resolve()
            entrants += [Entrant("bours", None, root=root), Entrant("bseq", 1, root=root)]
        if args.only:
            entrants = [e for e in entrants if e.name in args.only.split(",")]
        results = side_by_side(stack, proxy, producer, entrants, args, guard)
        report(results, args)
        capped = binding(stack, proxy, producer, args) if args.binding_seconds > 0 else None
        if capped:
            report_binding(capped, args)
        if args.profile:
            side_by_side(
                stack, proxy, producer, [Entrant("prof", None, profile=profile)], args, guard
            )
    finally:
        if stack:
            stack.close()
        proxy.stop()
        moto.stop()
    parts = sorted(str(p) for p in profile.parent.glob(profile.name + ".*"))
    if args.profile and parts:
        print(
            f"our consumer's top {args.profile} (a run of its own under cProfile, every thread, "
            "start-up and warm-up included):"
        )
        pstats.Stats(*parts).sort_stats(args.sort).print_stats(args.profile)


LABELS = {
    "ours": "ours",
    "seq": "sequential",
    "bours": "before: ours",
    "bseq": "before: seq",
}


def report(results: dict[str, dict], args: argparse.Namespace) -> None:
    print(
        f"hot path, send guard on: {args.rate:g} emails/s of one messageId to each consumer at "
        f"once (its own queue) for {args.seconds:g} s, {args.latency_ms:g} ms injected on every "
        "AWS call, moto a process per service behind the proxy; the machine is shared (2 cores, "
        "other helpers' work running): compare within this run"
    )
    print("caps not binding (counted, far above the rate), loop detector on:")
    names = list(results)
    print(
        f"{'':26}"
        + "".join(f"{LABELS.get(n, n):>14}" for n in names)
        + "   ratios: ours/seq, before's ours/seq, ours/before"
    )
    rows = [
        ("enqueue→SES p50 ms", "p50", "<= 75"),
        ("enqueue→SES p99 ms", "p99", "<= 120"),
        ("CPU ms per email", "cpu_ms", "<= 0.6x"),
        ("DynamoDB+SES calls/email", "steady", ""),
    ]
    for label, key, target in rows:
        cells = "".join(f"{results[n][key]:14.1f}" for n in names)
        ratios = [
            f"{results[a][key] / results[b][key]:.2f}"
            for a, b in PAIRS
            if a in results and b in results
        ]
        print(f"  {label:24}{cells}   {' / '.join(ratios):9} {target}")
    sent = ", ".join(f"{n} {r['sent']}/{r['enqueued']}" for n, r in results.items())
    print(f"  sent/enqueued in the stretch: {sent} (the sequential ones fall behind)")
    print("  calls per email by owner:")
    owners = sorted({k for r in results.values() for k in r["calls"]})
    for key in owners:
        print(f"    {key:26}" + "".join(f"{results[n]['calls'].get(key, 0):14.2f}" for n in names))


PAIRS = (("ours", "seq"), ("bours", "bseq"), ("ours", "bours"))  # the ratios, as present


def report_binding(capped: dict, args: argparse.Namespace) -> None:
    if capped:
        ok = all(n <= capped["cap"] for n in capped["windows"].values()) and all(
            n <= capped["cap"] for n in capped["rows"].values()
        )
        print(
            f"caps binding: two consumers, per-messageId cap {capped['cap']}/min, {args.rate:g}/s "
            f"for {args.binding_seconds:g} s: {'held, never above the cap' if ok else 'ABOVE THE CAP'}"
        )
        print(
            "  (sends by their arrival at SES, the row by the check's window: on a loaded machine "
            "a send checked late in a window arrives in the next; the row counts every send "
            "allowed, sent or still in flight)"
        )
        for start, n in sorted(capped["windows"].items()):
            print(f"  window {start}: sends {n:4}, counter row {capped['rows'].get(start, 0):4}")
        print(
            f"  enqueued {capped['enqueued']}, sent {capped['sent']} "
            f"({dict(capped['by_consumer'])}), sent twice {capped['twice']}, still queued "
            f"{capped['queued']} (SQS's approximate depth; enqueued - sent - queued: "
            f"{capped['enqueued'] - capped['sent'] - capped['queued']})"
        )


if __name__ == "__main__":
    main()
