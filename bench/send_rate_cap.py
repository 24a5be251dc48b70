"""One SES send rate for every consumer: two ``consume_emails`` processes with SES_MAX_SEND_RATE=10.

    .venv/bin/python bench/send_rate_cap.py [--requests 300] [--rate 10] [--consumers 2] [--runs 1]

moto server runs behind the fault proxy (no faults, no latency), which records the time of every
SES send moto accepted: SES counts a send when it arrives. Printed, side by side, for each run: the
rate measured there from the first send to the last ((sends - 1) / (last - first)) as a share of
the cap (issue 18's target: at least 95 %), and the most SES sends in any one-second window
(target: at most the cap). Both must hold at once: pacing below the cap costs every sender that
share of its quota, pacing at it lets jitter put one more send into some second. The bucket lives
in Redis at REDIS_URL under a key unique to each run (SES_RATE_REDIS_KEY), so other stacks sharing
the Redis are not disturbed. A fresh moto, proxy and queue per run; the machine's load shows in the
figures (a busy CPU delays both the consumers' supply of emails and their wake-ups).
"""

from __future__ import annotations

import argparse
import os
import uuid

import moto_env  # noqa: F401  (the project on sys.path, moto credentials, never real AWS)

from emailops.redis.client import reachable as redis_reachable
from tests.support.aws_proxy import AwsProxy, max_in_window
from tests.support.stack import MotoServer, Stack, consumer_flags, wait_until

TARGET_SHARE = 0.95  # of the cap, measured at SES from the first send to the last


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rate", type=int, default=10)
    parser.add_argument("--consumers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    print(
        f"send-rate cap: {args.consumers} consumers, SES_MAX_SEND_RATE={args.rate}, "
        f"{args.requests} single-recipient requests, Redis {'up' if redis_reachable(redis_url) else 'DOWN'}"
        + ("" if "--concurrency" in consumer_flags() else " (consumer without --concurrency)")
    )
    print(
        f"{'run':>3}{'sends':>7}{'span s':>8}{'emails/s':>10}{'% of cap':>10}"
        f"{'max in 1 s':>12}{'load':>6}   targets: >= {TARGET_SHARE:.0%} and <= {args.rate}"
    )
    for run in range(1, args.runs + 1):
        times = one_run(args, redis_url)
        span = times[-1] - times[0] if len(times) > 1 else float("nan")
        rate = (len(times) - 1) / span if len(times) > 1 else 0.0
        share, peak = rate / args.rate, max_in_window(times, 1.0)
        verdict = "ok" if share >= TARGET_SHARE and peak <= args.rate else "MISSED"
        print(
            f"{run:>3}{len(times):>7}{span:>8.1f}{rate:>10.2f}{share:>10.1%}{peak:>12d}"
            f"{os.getloadavg()[0]:>6.1f}   {verdict}"
        )


def one_run(args: argparse.Namespace, redis_url: str) -> list[float]:
    """Arrival times at SES (the proxy) of every send of one run, sorted."""
    limiter_env = {
        "SES_MAX_SEND_RATE": str(args.rate),
        "REDIS_URL": redis_url,
        "SES_RATE_REDIS_KEY": f"emailops-bench:ses-rate:{uuid.uuid4().hex}",
    }
    moto = MotoServer()
    proxy = AwsProxy(moto.url).start()
    stack = None
    try:
        stack = Stack(moto, endpoint=proxy.url, queue="bench-rate", visibility_timeout=60)
        stack.enqueue(
            {
                "messageId": "added-to-team",
                "recipients": [{"email": f"rate{i}@example.com"}],
                "context": {"teamName": f"Team {i}"},
            }
            for i in range(args.requests)
        )
        consumer_args = stack.consumer_args(until_empty=True, wait_time=1)
        processes = [
            stack.start_consumer(f"rate{n}", consumer_args, env=limiter_env)
            for n in range(args.consumers)
        ]
        # Bounded: at the cap the run takes requests/rate seconds; allow generous slack.
        finished = wait_until(
            lambda: not any(p.alive() for p in processes),
            timeout=120 + 3 * args.requests / max(1, args.rate),
            interval=0.5,
        )
        if not finished:
            raise SystemExit("consumers did not finish in time")
    finally:
        if stack:
            stack.close()
        proxy.stop()
        moto.stop()
    # A send counts when it reaches SES (the proxy), as SES's own rate limit counts it.
    return sorted(c.arrived for c in proxy.ses_sends() if c.client.startswith("rate"))


if __name__ == "__main__":
    main()
