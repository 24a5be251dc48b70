"""RSS per worker thread: peak RSS of ``consume_emails --until-empty`` at concurrency 1, 16 and 64.

    .venv/bin/python bench/consumer_rss_threads.py [--messages 300] [--levels 1,16,64]

moto server in its own process, no latency, SES_MAX_SEND_RATE=0; each level is a fresh process over
its own ``--messages`` single-recipient requests, its VmRSS sampled every 0.2 s. The per-thread
figure is the slope between the lowest and the highest level. Target: at most 4 MB per thread.
Small runs on a shared machine: the peak depends on timing, so read it as a rough figure.
"""

from __future__ import annotations

import argparse
import threading

import moto_env  # noqa: F401  (the project on sys.path, moto credentials, never real AWS)

from tests.support.stack import MotoServer, Stack


def peak_rss(stack: Stack, concurrency: int, messages: int) -> int:
    name = f"rss{concurrency}"
    stack.enqueue(
        {
            "messageId": "added-to-team",
            "recipients": [{"email": f"{name}-{i}@example.com"}],
            "context": {"teamName": f"Team {i}", "administrator": "Ada"},
        }
        for i in range(messages)
    )
    process = stack.start_consumer(
        name,
        stack.consumer_args(concurrency=concurrency, until_empty=True, wait_time=1),
        env={"SES_MAX_SEND_RATE": "0"},
    )
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.2):
            if (rss := process.rss_kib()) is not None:
                peak[0] = max(peak[0], rss)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = process.wait(timeout=600)
    done.set()
    sampler.join(timeout=5)
    if code != 0:
        raise SystemExit(f"consumer {name} exited {code}:\n{process.output()[-3000:]}")
    return peak[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--levels", default="1,16,64")
    args = parser.parse_args()
    levels = [int(level) for level in args.levels.split(",")]
    moto = MotoServer()
    stack = None
    peaks: dict[int, int] = {}
    try:
        stack = Stack(moto, queue="bench-rss-threads", visibility_timeout=120)
        for level in levels:
            peaks[level] = peak_rss(stack, level, args.messages)
    finally:
        if stack:
            stack.close()
        moto.stop()
    print(f"consumer peak RSS by --concurrency ({args.messages} messages each)")
    for level in levels:
        print(f"  concurrency {level:3d}: {peaks[level] / 1024:7.1f} MiB")
    low, high = min(levels), max(levels)
    per_thread = (peaks[high] - peaks[low]) / 1024 / (high - low)
    print(f"  per worker thread: {per_thread:.2f} MiB   (target <= 4 MB)")


if __name__ == "__main__":
    main()
