"""Consumer memory over a long run: RSS while 20,000 messages go through ``--concurrency 32``.

    .venv/bin/python bench/consumer_rss.py [--messages 20000] [--concurrency 32]

moto server in its own process, no proxy and no latency, SES_MAX_SEND_RATE=0. One long-running
``consume_emails`` process works while its VmRSS (/proc/<pid>/status) is sampled twice a second.
moto's SQS slows down with the queue's length (each call scans every message), so the harness keeps
a few hundred messages waiting and tops the queue up as the consumer drains it, until SES (moto's
GetSendQuota count) has taken every message; then the consumer gets SIGTERM. The first 10 % of
the run (Python and Django starting) is left out; of the rest, mean and peak RSS of the first and
the last quarter are printed side by side. Target: flat within 10 %. ``--messages`` shrinks the run.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import moto_env  # noqa: F401  (the project on sys.path, moto credentials, never real AWS)

from tests.support.stack import MotoServer, Stack, consumer_flags

WAITING_LOW, TOP_UP = 400, 300  # keep 400-700 messages waiting


def bodies(start: int, count: int):
    return (
        {
            "messageId": "added-to-team",
            "recipients": [{"email": f"rss{i}@example.com"}],
            "context": {"teamName": f"Team {i}", "administrator": "Ada"},
        }
        for i in range(start, start + count)
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--max-minutes", type=float, default=30, help="give up after this long")
    args = parser.parse_args()
    moto = MotoServer()
    stack = None
    samples: list[tuple[float, int]] = []
    try:
        stack = Stack(moto, queue="bench-rss", visibility_timeout=120)
        ses = stack.client("ses")
        baseline = ses.get_send_quota()["SentLast24Hours"]
        enqueued = stack.enqueue(bodies(0, min(args.messages, WAITING_LOW + TOP_UP)))
        process = stack.start_consumer(
            "rss",
            stack.consumer_args(concurrency=args.concurrency, wait_time=1),
            env={"SES_MAX_SEND_RATE": "0"},
        )
        started = time.monotonic()
        done = threading.Event()

        def sample() -> None:  # its own thread: moto's answers slow the loop below, not this
            while not done.wait(0.5):
                if (rss := process.rss_kib()) is not None:
                    samples.append((time.monotonic() - started, rss))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        deadline = started + args.max_minutes * 60
        sent = 0
        while sent < args.messages and time.monotonic() < deadline and process.alive():
            if enqueued < args.messages and stack.depth() < WAITING_LOW:
                count = min(TOP_UP, args.messages - enqueued)
                enqueued += stack.enqueue(bodies(enqueued, count))
            sent = int(ses.get_send_quota()["SentLast24Hours"] - baseline)
            time.sleep(0.5)
        took = time.monotonic() - started
        done.set()
        sampler.join(timeout=5)
        crashed = not process.alive()
        process.terminate(timeout=30)
        if crashed or sent < args.messages:
            raise SystemExit(
                f"only {sent} of {args.messages} sent in {took:.0f} s "
                f"({'consumer exited' if crashed else 'time is up'}); try --messages\n"
                + process.output()[-3000:]
            )
    finally:
        if stack:
            stack.close()
        moto.stop()
    steady = [(t, rss) for t, rss in samples if t >= 0.1 * took]
    quarter = max(1, len(steady) // 4)
    first, last = [r for _, r in steady[:quarter]], [r for _, r in steady[-quarter:]]
    growth = statistics.mean(last) / statistics.mean(first) - 1
    mode = (
        f"--concurrency {args.concurrency}"
        if "--concurrency" in consumer_flags()
        else "sequential consumer (no --concurrency)"
    )
    print(
        f"consumer RSS: {args.messages} single-recipient messages, {mode}, {took:.0f} s "
        f"({args.messages / took:.0f} emails/s), {len(samples)} samples"
    )
    print(f"{'':24}{'first quarter':>15}{'last quarter':>15}{'change':>9}")
    print(
        f"{'mean RSS, MiB':24}{statistics.mean(first) / 1024:15.1f}"
        f"{statistics.mean(last) / 1024:15.1f}{growth:+9.1%}   (target: within 10 %)"
    )
    print(f"{'peak RSS, MiB':24}{max(first) / 1024:15.1f}{max(last) / 1024:15.1f}")


if __name__ == "__main__":
    main()
