"""One SES send rate for every consumer: two ``consume_emails`` processes with SES_MAX_SEND_RATE=20.

    .venv/bin/python bench/send_rate_cap.py [--requests 400] [--rate 20] [--consumers 2]

moto server runs behind the fault proxy (no faults, no latency), which records the time of every
SES send moto accepted. Printed: the measured rate over the run (sends / (last - first); target at
least 90 % of the cap, 18/s for 20) and the highest count of SES sends in any one-second window
(target: at most the cap). The bucket lives in Redis at REDIS_URL under a key unique to this run
(SES_RATE_REDIS_KEY), so other stacks sharing the Redis are not disturbed.
"""

from __future__ import annotations

import argparse
import os
import uuid

import moto_env  # noqa: F401  (the project on sys.path, moto credentials, never real AWS)

from tests.support.aws_proxy import AwsProxy, max_in_window
from tests.support.stack import MotoServer, Stack, consumer_flags, wait_until


def redis_reachable(url: str) -> bool:
    try:
        import redis

        return bool(redis.Redis.from_url(url, socket_timeout=2).ping())
    except Exception:  # any failure means "no shared bucket": said in the output
        return False


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--rate", type=int, default=20)
    parser.add_argument("--consumers", type=int, default=2)
    args = parser.parse_args()
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
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
    times = sorted(c.arrived for c in proxy.ses_sends() if c.client.startswith("rate"))
    span = times[-1] - times[0] if len(times) > 1 else float("nan")
    rate = (len(times) - 1) / span if len(times) > 1 else 0.0
    peak = max_in_window(times, 1.0)
    print(
        f"send-rate cap: {args.consumers} consumers, SES_MAX_SEND_RATE={args.rate}, "
        f"{args.requests} single-recipient requests, Redis {'up' if redis_reachable(redis_url) else 'DOWN'}"
        + ("" if "--concurrency" in consumer_flags() else " (consumer without --concurrency)")
    )
    print(f"{'':34}{'measured':>10}{'target':>12}")
    print(f"{'emails/s over the run':34}{rate:10.1f}{f'>= {0.9 * args.rate:g}':>12}")
    print(f"{'most SES sends in one second':34}{peak:10d}{f'<= {args.rate}':>12}")
    print(f"{'SES sends':34}{len(times):10d}   over {span:.1f} s")


if __name__ == "__main__":
    main()
