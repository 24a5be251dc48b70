"""Consumer throughput under AWS latency: a sequential consumer (``consume_emails --concurrency 1``)
against ``consume_emails`` with default flags, at 0 and 20 ms injected latency, side by side.

    .venv/bin/python bench/consumer_concurrency.py [--requests 300] [--latencies 0,20]

moto server runs in its own process behind the fault proxy (tests/support/aws_proxy.py), which adds
the latency to every AWS call. Each run is a real ``manage.py consume_emails --until-empty`` process
over its own single-recipient requests. emails/s is measured at the proxy: SES sends accepted
divided by the time from the process's first AWS call to its last send, so Python's start-up is
left out. Also per email: AWS calls (the steady path's DynamoDB and SES calls, and all of them) and
DynamoDB reads and writes, the floor of its capacity units.

moto runs one process per service (SQS, DynamoDB, the rest: ``MotoPerService``), as AWS's services
are separate: a single moto process can use one core at most, and on a small machine it saturated
long before the consumer did, so the ratio measured moto's GIL. ``--one-moto`` runs the single
process instead. Printed per email as well: the CPU moto, the proxy and the consumer spent (the
machine's whole budget: when their sum per email times the rate nears the core count, the machine
is the limit, not the consumer).
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import moto_env  # noqa: F401  (the project on sys.path, moto credentials, never real AWS)

from emailops.core.reputation import ACCOUNT
from tests.support.aws_proxy import AwsProxy, latency
from tests.support.stack import MotoPerService, MotoServer, Stack


def single_recipient(prefix: str, count: int) -> list[dict]:
    return [
        {
            "messageId": "added-to-team",
            "recipients": [{"email": f"{prefix}{i}@example.com"}],
            "context": {"teamName": f"Team {i}", "administrator": "Ada"},
        }
        for i in range(count)
    ]


READS = {"GetItem", "Query", "BatchGetItem", "Scan"}
WRITES = {"UpdateItem", "PutItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of running processes, from /proc."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(
    stack: Stack,
    proxy: AwsProxy,
    name: str,
    concurrency: int | None,
    requests: int,
    moto_pids: list[int],
) -> dict:
    """One consume_emails --until-empty over its own requests; ``concurrency`` None = defaults."""
    stack.enqueue(single_recipient(f"{name}-", requests))
    moto_before, proxy_before, child_before = (
        cpu_seconds(moto_pids),
        time.process_time(),
        children_cpu(),
    )
    process = stack.start_consumer(
        name,
        stack.consumer_args(concurrency=concurrency, until_empty=True, wait_time=1),
        env={"SES_MAX_SEND_RATE": "0"},
    )
    started = time.monotonic()
    code = process.wait(timeout=max(600, requests * 2))
    wall = time.monotonic() - started
    moto_cpu = cpu_seconds(moto_pids) - moto_before
    proxy_cpu = time.process_time() - proxy_before  # the proxy runs in this process
    consumer_cpu = children_cpu() - child_before  # its start-up included
    if code != 0:
        raise SystemExit(f"consumer {name} exited {code}:\n{process.output()[-3000:]}")
    calls = [c for c in proxy.records() if c.client == name]
    sends = [c for c in calls if c.service == "ses" and c.operation == "SendEmail" and c.accepted]
    first = min(c.at for c in calls)
    busy = max(c.at for c in sends) - first
    answered = sorted(c.upstream_seconds * 1000 for c in calls if c.upstream_seconds)
    per_email = max(1, len(sends))
    # The steady path: DynamoDB and SES calls (SQS receive and delete are batched, shown apart).
    steady = [c for c in calls if c.service in ("dynamodb", "ses")]
    reads = sum(1 for c in steady if c.operation in READS)
    writes = sum(1 for c in steady if c.operation in WRITES)
    # The reputation counters' ADDs (keys are scopes), written per second, not per email.
    counters = sum(
        1
        for c in steady
        if c.operation in WRITES and (c.key == ACCOUNT or c.key.startswith(("message#", "org#")))
    )
    return {
        "sends": len(sends),
        "rate": len(sends) / busy,
        "busy": busy,
        "wall": wall,
        "calls": len(calls) / per_email,
        "steady": len(steady) / per_email,
        "reads": reads / per_email,
        "writes": writes / per_email,
        "counter_writes": counters / per_email,
        "moto_p50": answered[len(answered) // 2],
        "moto_p90": answered[int(len(answered) * 0.9)],
        "cpu_ms": {
            "moto": moto_cpu * 1000 / per_email,
            "proxy": proxy_cpu * 1000 / per_email,
            "consumer": consumer_cpu * 1000 / per_email,
        },
    }


def at_latency(latency_ms: float, requests: int, one_moto: bool) -> tuple[dict, dict]:
    moto = MotoServer() if one_moto else MotoPerService()
    proxy = AwsProxy(moto.url, routes=moto.routes()).start()
    pids = [moto.process.pid] if one_moto else [p.pid for p in moto.processes()]
    stack = None
    try:
        stack = Stack(moto, endpoint=proxy.url, queue="bench-concurrency", visibility_timeout=60)
        if latency_ms:
            proxy.add(latency(latency_ms / 1000))
        sequential = run(stack, proxy, f"seq{latency_ms:g}", 1, requests, pids)
        ours = run(stack, proxy, f"ours{latency_ms:g}", None, requests, pids)
    finally:
        if stack:
            stack.close()
        proxy.stop()
        moto.stop()
    return sequential, ours


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--latencies", default="0,20", help="injected ms per AWS call")
    parser.add_argument("--one-moto", action="store_true", help="one moto process for all")
    args = parser.parse_args()
    latencies = [float(x) for x in args.latencies.split(",")]
    results = {ms: at_latency(ms, args.requests, args.one_moto) for ms in latencies}
    print(
        f"consumer throughput: {args.requests} single-recipient requests per run; a sequential "
        "consumer (--concurrency 1) against consume_emails with default flags, moto server "
        f"({'one process' if args.one_moto else 'a process per service'}) behind the fault "
        "proxy (noisy: shared 2-core machine). Targets: >= 1.5x at 0 ms, >= 4x at 20 ms"
    )
    print(f"{'injected latency':18}{'sequential':>12}{'defaults':>10}{'ratio':>8}")
    for ms, (seq, ours) in results.items():
        print(
            f"{f'{ms:g} ms':18}{seq['rate']:9.1f}/s{ours['rate']:8.1f}/s"
            f"{ours['rate'] / seq['rate']:7.2f}x"
        )
    print("per email (defaults), from the proxy's records:")
    for ms, (_, ours) in results.items():
        print(
            f"  {ms:g} ms: DynamoDB+SES calls {ours['steady']:.2f} (target <= 3), all AWS calls "
            f"{ours['calls']:.2f}; DynamoDB reads {ours['reads']:.2f} (cold caches at start), "
            f"writes {ours['writes']:.2f} ({ours['counter_writes']:.2f} of them counters) "
            "(capacity units: 1 per read (<= 4 KB, consistent) and write (<= 1 KB) at least); "
            f"moto answer p50/p90 {ours['moto_p50']:.0f}/{ours['moto_p90']:.0f} ms"
        )
    print("CPU ms per email (moto, the proxy, the consumer with its start-up):")
    for ms, runs in results.items():
        for label, result in zip(("sequential", "defaults"), runs, strict=True):
            cpu = result["cpu_ms"]
            print(
                f"  {ms:g} ms {label:10} moto {cpu['moto']:5.1f}  proxy {cpu['proxy']:5.1f}  "
                f"consumer {cpu['consumer']:5.1f}  sum {sum(cpu.values()):5.1f}"
            )
    # The machine's ceiling: every core busy on this stack's CPU per email, and no better.
    cores = os.cpu_count() or 1
    print(f"the machine's ceiling ({cores} cores / the defaults' CPU per email):")
    for ms, (seq, ours) in results.items():
        ceiling = cores * 1000 / sum(ours["cpu_ms"].values())
        print(
            f"  {ms:g} ms: {ceiling:.1f} emails/s, a ratio of {ceiling / seq['rate']:.2f}x at most"
        )


if __name__ == "__main__":
    main()
