"""Consumer throughput under AWS latency: ``consume_emails --concurrency 1`` against ``--concurrency
32``, side by side in one run.

    .venv/bin/python bench/consumer_concurrency.py [--requests 500] [--latency-ms 20] [--high 32]

moto server runs in its own process behind the fault proxy (tests/support/aws_proxy.py), which adds
the latency to every AWS call. Each run is a real ``manage.py consume_emails --until-empty`` process
over its own single-recipient requests. emails/s is measured at the proxy: SES sends accepted
divided by the time from the process's first AWS call to its last send, so Python's start-up is
left out. Target: the ratio is at least 10x. A consumer without ``--concurrency`` runs both
sequentially (the flag is passed only when ``consume_emails --help`` lists it).

moto server is one Python process: on a small machine it saturates before the consumer does. The
"moto answer time" rows show it (its own time per call, without the injected latency); when it
grows with concurrency, the ratio measures moto, not the consumer.
"""

from __future__ import annotations

import argparse
import time

import moto_env  # noqa: F401  (the project on sys.path, moto credentials, never real AWS)

from tests.support.aws_proxy import AwsProxy, latency
from tests.support.stack import MotoServer, Stack, consumer_flags


def single_recipient(prefix: str, count: int) -> list[dict]:
    return [
        {
            "messageId": "added-to-team",
            "recipients": [{"email": f"{prefix}{i}@example.com"}],
            "context": {"teamName": f"Team {i}", "administrator": "Ada"},
        }
        for i in range(count)
    ]


def run(stack: Stack, proxy: AwsProxy, concurrency: int, requests: int) -> dict:
    name = f"c{concurrency}"
    stack.enqueue(single_recipient(f"{name}-", requests))
    process = stack.start_consumer(
        name,
        stack.consumer_args(concurrency=concurrency, until_empty=True, wait_time=1),
        env={"SES_MAX_SEND_RATE": "0"},
    )
    started = time.monotonic()
    code = process.wait(timeout=max(600, requests * 2))
    wall = time.monotonic() - started
    if code != 0:
        raise SystemExit(f"consumer {name} exited {code}:\n{process.output()[-3000:]}")
    calls = [c for c in proxy.records() if c.client == name]
    sends = [c for c in calls if c.service == "ses" and c.operation == "SendEmail" and c.accepted]
    first = min(c.at for c in calls)
    busy = max(c.at for c in sends) - first
    answered = sorted(c.upstream_seconds * 1000 for c in calls if c.upstream_seconds)
    return {
        "sends": len(sends),
        "rate": len(sends) / busy,
        "busy": busy,
        "wall": wall,
        "calls": len(calls) / max(1, len(sends)),
        "moto_p50": answered[len(answered) // 2],
        "moto_p90": answered[int(len(answered) * 0.9)],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--latency-ms", type=float, default=20)
    parser.add_argument("--high", type=int, default=32, help="the concurrent run's --concurrency")
    args = parser.parse_args()
    moto = MotoServer()
    proxy = AwsProxy(moto.url).start()
    stack = None
    try:
        stack = Stack(moto, endpoint=proxy.url, queue="bench-concurrency", visibility_timeout=60)
        proxy.add(latency(args.latency_ms / 1000))
        low = run(stack, proxy, 1, args.requests)
        high = run(stack, proxy, args.high, args.requests)
    finally:
        if stack:
            stack.close()
        proxy.stop()
        moto.stop()
    flag = "--concurrency" in consumer_flags()
    print(
        f"consumer throughput: {args.requests} single-recipient requests per run, "
        f"{args.latency_ms:g} ms injected per AWS call (moto server behind the fault proxy)"
        + (
            ""
            if flag
            else "\n  (consume_emails has no --concurrency here: both runs are sequential)"
        )
    )
    print(f"{'':28}{'concurrency 1':>16}{f'concurrency {args.high}':>18}{'ratio':>9}")
    print(
        f"{'emails/s':28}{low['rate']:16.1f}{high['rate']:18.1f}"
        f"{high['rate'] / low['rate']:8.1f}x   (target >= 10x)"
    )
    print(f"{'SES sends':28}{low['sends']:16d}{high['sends']:18d}")
    print(f"{'first call -> last send, s':28}{low['busy']:16.1f}{high['busy']:18.1f}")
    print(f"{'process wall time, s':28}{low['wall']:16.1f}{high['wall']:18.1f}")
    print(f"{'AWS calls per email':28}{low['calls']:16.1f}{high['calls']:18.1f}")
    # If moto's own answer time grows with concurrency, moto (one process) is the bottleneck.
    for p in ("p50", "p90"):
        label = f"moto answer time {p}, ms"
        print(f"{label:28}{low['moto_' + p]:16.1f}{high['moto_' + p]:18.1f}")


if __name__ == "__main__":
    main()
