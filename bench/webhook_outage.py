"""consume_emails throughput with webhooks on (the Celery outbox on the real Redis) while a
``celery worker`` posts every event to a receiver that answers at once, and then to one that
hangs 30 s per post: side by side, the hung receiver must not slow the consumer, which only ever
pushes an event to Redis.

moto server in its own process (tests.support.stack), the real ``consume_emails`` process
(``--until-empty``, timed), a celery worker process (4 threads) on a console database of its own.
Needs Redis on 127.0.0.1:6379. Usage: python bench/webhook_outage.py [--messages 300]

``--outage`` instead runs issue 32's fault run (tests/faults/webhook_outage.py, full size: 500
emails of sends, deliveries, bounces and complaints; the broker, a private redis-server, stopped
60 s and started empty; 10 kill -9s of consumers and webhook workers; the receiver 503 then hung
30 s) beside the same run without any fault, and prints emails/s (emails / time until both queues
drained) and events expected / delivered / duplicated for each.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import moto_env  # noqa: F401  (the project on sys.path, moto credentials, never real AWS)

from tests.support.stack import MotoServer, Stack

QUEUE = f"emailops-bench-webhooks-{uuid.uuid4().hex[:8]}"
ENV = {
    "WEBHOOK_OUTBOX": "celery",
    "WEBHOOK_QUEUE": QUEUE,
    "CELERY_BROKER_URL": "redis://127.0.0.1:6379/15",
    "CELERY_TASK_DEFAULT_QUEUE": QUEUE,
    "SES_MAX_SEND_RATE": "0",
}


WORKER = ["--pool", "threads", "--concurrency", "4"]


class Receiver:
    """Answers 200 after ``hang`` seconds (released early when closed)."""

    def __init__(self, hang: float) -> None:
        released = threading.Event()
        self.release = released.set
        self.posts = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.posts += 1
                released.wait(hang)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release()
        self.server.shutdown()


def bodies(run: str, count: int) -> list[dict]:
    return [
        {
            "messageId": "added-to-team",
            "recipients": [{"email": f"{run}{i}@example.com"}],
            "context": {"teamName": f"Team {i}", "administrator": "Ada"},
        }
        for i in range(count)
    ]


def deliveries(database: Path) -> dict[str, int]:
    with sqlite3.connect(database) as db:
        rows = db.execute(
            "SELECT state, COUNT(*) FROM templates_admin_webhookdelivery GROUP BY state"
        ).fetchall()
    return dict(rows)


def run(stack: Stack, database: Path, messages: int, hang: float, name: str) -> dict:
    receiver = Receiver(hang)
    stack.manage(
        "shell",
        "-c",
        "from webhooks.models import WebhookEndpoint\n"
        "from emailops import container\n"
        "from webhooks.endpoints import endpoint_add\n"
        "WebhookEndpoint.objects.all().delete()\n"
        f"endpoint_add(adapters=container.current(), url={receiver.url!r})",
    )
    try:
        stack.enqueue(bodies(name, messages))
        started = time.perf_counter()
        stack.consume()
        seconds = time.perf_counter() - started
        time.sleep(3)  # what the worker has done by then, for the counts below
        return {"seconds": seconds, "posts": receiver.posts, **deliveries(database)}
    finally:
        receiver.close()


def outage(messages: int, redis_seconds: float, kills: int) -> None:
    from tests.faults.webhook_outage import run_outage

    results = {}
    for name, faults in (("no outage", False), ("outage", True)):
        moto = MotoServer()
        try:
            results[name] = run_outage(
                moto,
                Path(tempfile.mkdtemp(prefix="emailops-bench-whout-")),
                emails=messages,
                redis_seconds=redis_seconds,
                receiver_seconds=30,
                kills=kills,
                seed=32,
                deadline_seconds=900,
                outage=faults,
            )
        finally:
            moto.stop()
    print(f"webhooks at least once, {messages} emails, broker stopped {redis_seconds:.0f} s")
    for name, result in results.items():
        rate = messages / result.timings["queues drained after"]
        print(f"--- {name}: consume_emails {rate:.1f} emails/s\n{result.report()}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--outage", action="store_true", help="issue 32's fault run, full size")
    parser.add_argument("--redis-seconds", type=float, default=60)
    parser.add_argument("--kills", type=int, default=10)
    args = parser.parse_args()
    if args.outage:
        outage(args.messages if args.messages != 300 else 500, args.redis_seconds, args.kills)
        return
    moto = MotoServer()
    stack = worker = None
    try:
        stack = Stack(moto, queue="bench-webhooks", visibility_timeout=120, extra_env=ENV)
        database = Path(tempfile.mkdtemp(prefix="emailops-bench-webhooks-")) / "console.sqlite3"
        stack.env.update(stack.console_database(database))
        worker = stack.start_process(
            "webhook-worker",
            [sys.executable, "-m", "celery", "-A", "emailops", "worker", "-Q", QUEUE, *WORKER],
        )
        ok = run(stack, database, args.messages, 0, "ok")
        hung = run(stack, database, args.messages, 30, "hung")
    finally:
        if worker is not None:
            worker.terminate(timeout=30)
        if stack is not None:
            stack.close()
        moto.stop()
    print(f"consume_emails with webhooks on, {args.messages} emails, moto server, celery worker")
    print(f"{'':30}{'receiver ok':>13}{'hung 30 s':>13}{'ratio':>8}")
    rate_ok, rate_hung = args.messages / ok["seconds"], args.messages / hung["seconds"]
    print(
        f"{'emails/s (consume_emails)':30}{rate_ok:13.1f}{rate_hung:13.1f}{rate_hung / rate_ok:8.2f}"
    )
    print(f"{'webhook posts received':30}{ok['posts']:13d}{hung['posts']:13d}")
    for state in sorted((set(ok) | set(hung)) - {"seconds", "posts"}):
        print(f"{'deliveries ' + state:30}{ok.get(state, 0):13d}{hung.get(state, 0):13d}")
    print(json.dumps({"ok": ok, "hung": hung}))


if __name__ == "__main__":
    main()
