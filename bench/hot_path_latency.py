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
import statistics
import sys
import tempfile
import time
from pathlib import Path

import moto_env  # noqa: F401  (the project on sys.path, moto credentials, never real AWS)

from tests.support.aws_proxy import AwsProxy, Call, latency
from tests.support.stack import MotoPerService, Stack, wait_until

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
    """Sends one request per SendMessage at ``rate`` a second; remembers when each was sent."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.url = stack.direct(stack.queue_url)
        self.sent_at: dict[str, float] = {}
        self.count = 0

    def run(self, prefix: str, rate: float, seconds: float) -> list[str]:
        addresses = []
        start = time.perf_counter()
        n = int(rate * seconds)
        for i in range(n):
            due = start + i / rate
            if (pause := due - time.perf_counter()) > 0:
                time.sleep(pause)
            self.count += 1
            address = f"{prefix}-{self.count}@example.com"
            body = json.dumps(request(address, self.count))
            self.sent_at[address] = time.time()
            self.stack.sqs.send_message(QueueUrl=self.url, MessageBody=body)
            addresses.append(address)
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


def phase(
    stack: Stack,
    proxy: AwsProxy,
    producer: Producer,
    name: str,
    concurrency: int | None,
    args: argparse.Namespace,
    env: dict[str, str],
    *,
    drain: bool,
    profile: Path | None = None,
    root: Path | None = None,
) -> dict:
    """One consumer: warm up, then ``args.seconds`` at ``args.rate``, measured."""
    stack.purge()
    env = {"SES_MAX_SEND_RATE": "0", **env}
    if root is not None:  # another checkout's consumer (--before), on the same stack
        argv = [sys.executable, str(root / "manage.py"), "consume_emails"]
        argv += stack.consumer_args(concurrency=concurrency)
        env |= {"AWS_SDK_UA_APP_ID": name, "PYTHONPATH": str(root)}
        consumer = stack.start_process(name, argv, env=env)
    elif profile is None:
        consumer = stack.start_consumer(name, stack.consumer_args(concurrency=concurrency), env=env)
    else:  # every thread under cProfile (its overhead is in this run's CPU)
        argv = [sys.executable, str(Path(__file__).with_name("profiled_consumer.py"))]
        argv += [str(profile), "consume_emails", *stack.consumer_args(concurrency=concurrency)]
        consumer = stack.start_process(name, argv, env={**env, "AWS_SDK_UA_APP_ID": name})
    warm = producer.run(f"{name}-warm", args.rate, 3)
    if not wait_until(
        lambda: len(sends_of(proxy.records()).keys() & set(warm)) == len(warm), timeout=90
    ):
        raise SystemExit(f"{name}: warm-up not sent:\n{consumer.output()[-3000:]}")
    if not drain:  # the sequential one: let it catch up with the warm-up before measuring
        time.sleep(0.5)
    cpu0, t0 = cpu_seconds(consumer.pid), time.time()
    measured = producer.run(name, args.rate, args.seconds)
    if drain:
        wait_until(
            lambda: len(sends_of(proxy.records()).keys() & set(measured)) == len(measured),
            timeout=30,
        )
    cpu1, t1 = cpu_seconds(consumer.pid), time.time()
    consumer.terminate(timeout=30)
    calls = [c for c in proxy.records() if c.client == name and t0 <= c.at <= t1]
    sends = {a: c for a, c in sends_of(calls).items()}
    sent = [a for a in measured if a in sends]
    latencies = [(sends[a].arrived - producer.sent_at[a]) * 1000 for a in sent]
    per_email = max(1, len(sends))
    owners = collections.Counter(owner(c) for c in calls)
    return {
        "name": name,
        "sent": len(sent),
        "enqueued": len(measured),
        "p50": percentile(latencies, 0.5),
        "p99": percentile(latencies, 0.99),
        "mean": statistics.fmean(latencies) if latencies else float("nan"),
        "cpu_ms": (cpu1 - cpu0) * 1000 / per_email,
        "calls": {k: v / per_email for k, v in owners.items()},
        "steady": sum(1 for c in calls if c.service in ("dynamodb", "ses")) / per_email,
        "output": consumer.output(),
    }


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
    measured = producer.run("cap", args.rate, args.binding_seconds)
    time.sleep(2)
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
        rows[start] = int((item or {}).get("Count", {"N": "0"})["N"])
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
        ours = phase(stack, proxy, producer, "ours", None, args, guard, drain=True)
        seq = phase(stack, proxy, producer, "seq", 1, args, guard, drain=False)
        report(ours, seq, args, "this checkout")
        if args.before:
            root = Path(args.before).resolve()
            b_ours = phase(
                stack, proxy, producer, "bours", None, args, guard, drain=True, root=root
            )
            b_seq = phase(stack, proxy, producer, "bseq", 1, args, guard, drain=False, root=root)
            report(b_ours, b_seq, args, f"before: {root}")
        if args.profile:
            phase(stack, proxy, producer, "prof", None, args, guard, drain=True, profile=profile)
        capped = binding(stack, proxy, producer, args) if args.binding_seconds > 0 else None
    finally:
        if stack:
            stack.close()
        proxy.stop()
        moto.stop()
    if capped:
        report_binding(capped, args)
    parts = sorted(str(p) for p in profile.parent.glob(profile.name + ".*"))
    if args.profile and parts:
        print(
            f"our consumer's top {args.profile} (a run of its own under cProfile, every thread, "
            "start-up and warm-up included):"
        )
        pstats.Stats(*parts).sort_stats(args.sort).print_stats(args.profile)


def report(ours: dict, seq: dict, args: argparse.Namespace, which: str) -> None:
    print(f"== {which}")
    print(
        f"hot path, send guard on: {args.rate:g} emails/s of one messageId for {args.seconds:g} s, "
        f"{args.latency_ms:g} ms injected on every AWS call, moto a process per service behind "
        "the proxy; machine shared (2 cores, other work running): compare within this run"
    )
    print("caps not binding (counted, far above the rate), loop detector on:")
    print(f"{'':26}{'ours (defaults)':>17}{'sequential':>13}{'ratio':>8}   target")
    rows = [
        ("enqueue→SES p50 ms", "p50", "<= 75"),
        ("enqueue→SES p99 ms", "p99", "<= 120"),
        ("CPU ms per email", "cpu_ms", "<= 0.6x"),
        ("DynamoDB+SES calls/email", "steady", ""),
    ]
    for label, key, target in rows:
        a, b = ours[key], seq[key]
        print(f"  {label:24}{a:17.1f}{b:13.1f}{a / b:8.2f}   {target}")
    print(
        f"  sent/enqueued in the stretch: ours {ours['sent']}/{ours['enqueued']}, "
        f"sequential {seq['sent']}/{seq['enqueued']} (it falls behind)"
    )
    print("  calls per email by owner:")
    for key in sorted(ours["calls"].keys() | seq["calls"].keys()):
        print(f"    {key:28}{ours['calls'].get(key, 0):8.2f}{seq['calls'].get(key, 0):8.2f}")


def report_binding(capped: dict, args: argparse.Namespace) -> None:
    if capped:
        ok = all(n <= capped["cap"] for n in capped["windows"].values()) and all(
            n <= capped["cap"] for n in capped["rows"].values()
        )
        print(
            f"caps binding: two consumers, per-messageId cap {capped['cap']}/min, {args.rate:g}/s "
            f"for {args.binding_seconds:g} s: {'held, never above the cap' if ok else 'ABOVE THE CAP'}"
        )
        for start, n in sorted(capped["windows"].items()):
            print(f"  window {start}: sends {n:4}, counter row {capped['rows'].get(start, 0):4}")
        print(
            f"  enqueued {capped['enqueued']}, sent {capped['sent']} "
            f"({dict(capped['by_consumer'])}), sent twice {capped['twice']}, still queued "
            f"{capped['queued']} (lost: {capped['enqueued'] - capped['sent'] - capped['queued']})"
        )


if __name__ == "__main__":
    main()
