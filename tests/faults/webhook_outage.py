"""The webhook outage run, shared by tests/faults/test_webhook_outage.py and bench/webhook_outage.py:
real processes on moto's server (two ``consume_emails``, one ``consume_ses_events``, two webhook
workers, beat) with the SES simulator's sends, deliveries, bounces and complaints, while the
Celery broker (a PRIVATE ``redis-server`` on its own port, never the shared 6379) is stopped and
started empty, consumers and webhook workers are ``kill -9``ed, and the receiver answers 503 and
then hangs. What every SENT row and its timeline imply is compared with what the receiver
accepted: expected, delivered, duplicated, missing; each event under one signed ``webhook-id``."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from standardwebhooks.webhooks import Webhook

from tests.faults.workload import FAST_RETRIES, VISIBILITY_SECONDS
from tests.support.stack import ChildProcess, MotoServer, Stack, free_port, wait_until

SIM = "simulator.amazonses.com"
SCENARIOS = ("success", "bounce", "complaint")
# The timeline's SES event types that make a webhook event (Send makes none).
PUBLISHED = {
    "Delivery": "email.delivered",
    "Bounce": "email.bounced",
    "Complaint": "email.complained",
}


class PrivateRedis:
    """A redis-server of the run's own, keeping nothing on disk: stopped, it starts again empty
    (a Redis that lost its data)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        argv = ["redis-server", "--port", str(self.port), "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis

        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)

        def up() -> bool:
            try:
                return bool(client.ping())
            except redis.RedisError:
                return False

        assert wait_until(up, timeout=10), "the private redis-server did not start"

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


class FlakyReceiver:
    """Answers 200, or (``mode``) 503 at once, or hangs past the sender's 5 s and then 503.
    ``accepted``: (webhook-id, journal key, event type) of every POST answered 200, its
    signature checked as it arrived (standardwebhooks refuses a timestamp 5 minutes old, and a
    full run lasts longer)."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.secret = ""
        self.accepted: list[tuple[str, str, str]] = []
        self.unsigned = 0
        self.refused = 0
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                mode = receiver.mode
                if mode == "hang":
                    time.sleep(6)
                headers = dict(self.headers.items())
                with receiver.lock:
                    if mode != "ok":
                        receiver.refused += 1
                    else:
                        try:
                            data = Webhook(receiver.secret).verify(body, headers)
                        except Exception:
                            receiver.unsigned += 1
                            mode = "503"
                        else:
                            event = (data["data"]["journalKey"], data["type"])
                            receiver.accepted.append((headers["webhook-id"], *event))
                self.send_response(200 if mode == "ok" else 503)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class OutageResult:
    expected: set[tuple[str, str]]
    delivered: dict[str, tuple[str, str]]  # webhook-id → (journal key, event type)
    duplicated: int
    missing: list[tuple[str, str]]
    ids_per_event: dict[tuple[str, str], set[str]]
    timings: dict[str, float] = field(default_factory=dict)
    kills: int = 0
    refused: int = 0
    unsigned: int = 0

    def report(self) -> str:
        return (
            f"events expected       {len(self.expected)}\n"
            f"events delivered      {len(set(self.delivered.values()) & self.expected)}\n"
            f"duplicated posts      {self.duplicated}\n"
            f"missing               {len(self.missing)} {self.missing[:5]}\n"
            f"refused posts (503)   {self.refused}\n"
            f"unsigned posts        {self.unsigned}\n"
            f"processes kill -9ed   {self.kills}\n"
            + "".join(f"{name:<22}{value:.1f} s\n" for name, value in self.timings.items())
        )


def bodies(count: int, prefix: str) -> list[dict]:
    """``count`` one-recipient requests, cycling through success, bounce and complaint."""
    return [
        {
            "messageId": "added-to-team",
            "recipients": [{"email": f"{SCENARIOS[i % 3]}+{prefix}{i}@{SIM}"}],
            "context": {"teamName": f"Team {i}", "administrator": "Ada"},
        }
        for i in range(count)
    ]


def expected_events(stack: Stack) -> set[tuple[str, str]]:
    """What the journal implies: email.sent per SENT row, and one event per published SES event
    on its timeline."""
    expected: set[tuple[str, str]] = set()
    pages = stack.dynamodb.get_paginator("scan").paginate(
        TableName=stack.journal_table, ConsistentRead=True
    )
    for page in pages:
        for item in page["Items"]:
            if item.get("Status", {}).get("S") != "SENT":
                continue
            key = item["Id"]["S"]
            expected.add((key, "email.sent"))
            for entry in item.get("DeliveryEvents", {}).get("L", []):
                kind = PUBLISHED.get(entry["M"]["Type"]["S"])
                if kind:
                    expected.add((key, kind))
    return expected


def run_outage(
    moto: MotoServer,
    workdir: Path,
    *,
    emails: int,
    redis_seconds: float,
    receiver_seconds: float,
    kills: int,
    seed: int,
    deadline_seconds: float,
    outage: bool = True,
) -> OutageResult:
    rng = random.Random(seed)
    tag = uuid.uuid4().hex[:8]
    queue = f"whout-{tag}"
    redis = PrivateRedis()
    receiver = FlakyReceiver()
    stack = Stack(
        moto,
        queue=f"whout-requests-{tag}",
        journal_table=f"whout-journal-{tag}",
        bucket=f"whout-templates-{tag}",
        events_queue=f"whout-events-{tag}",
        visibility_timeout=VISIBILITY_SECONDS,
        extra_env={
            **FAST_RETRIES,
            "SES_SIMULATE_EVENTS": "true",
            "SES_EVENTS_VERIFY_SIGNATURES": "false",
            "WEBHOOK_OUTBOX": "durable",  # the default (the suite's own settings turn it off)
            "WEBHOOK_QUEUE": queue,
            "CELERY_BROKER_URL": redis.url,
            # Beat's periodic work (the webhook sweeps among it) goes to the workers below.
            "CELERY_TASK_DEFAULT_QUEUE": f"whout-default-{tag}",
        },
    )
    timings: dict[str, float] = {}
    killed = 0
    try:
        stack.env.update(stack.console_database(workdir / "console.sqlite3"))
        secret = stack.manage(
            "shell",
            "-c",
            "from emailops import container\n"
            "from webhooks.endpoints import endpoint_add\n"
            f"print(endpoint_add(adapters=container.current(), url={receiver.url!r})[1])",
        ).stdout.split()[-1]
        receiver.secret = secret
        celery = [sys.executable, "-m", "celery", "-A", "emailops"]

        def webhook_worker(n: int) -> ChildProcess:
            # The webhook queue and the default one (beat's stranded-delivery sweep), as a
            # deployment's workers read them between them.
            queues = f"{queue},whout-default-{tag}"
            argv = [*celery, "worker", "-Q", queues, "--pool", "threads", "--concurrency", "4"]
            return stack.start_process(
                f"whout-worker{n}", [*argv, "--hostname", f"whout{n}-{tag}@%h"]
            )

        args = stack.consumer_args(concurrency=4, wait_time=1)
        consumers = [stack.start_consumer(f"whout-consumer{n}", args) for n in range(2)]
        events = stack.start_consumer(
            "whout-events", ["--wait-time", "1"], command="consume_ses_events"
        )
        workers = [webhook_worker(n) for n in range(2)]
        schedule = workdir / "beat-schedule"
        stack.start_process("whout-beat", [*celery, "beat", "--schedule", str(schedule)])
        began = time.monotonic()
        stack.enqueue(bodies(emails, tag))
        # (a) the broker stopped, and started empty; (b) kill -9 at random meanwhile.
        if outage:
            time.sleep(1.0)
            redis.stop()
            kill_at = sorted(rng.uniform(0, redis_seconds) for _ in range(kills))
            stopped = time.monotonic()
            for at in kill_at:
                time.sleep(max(0.0, stopped + at - time.monotonic()))
                pool = rng.choice(("consumer", "worker"))
                victims = consumers if pool == "consumer" else workers
                slot = rng.randrange(len(victims))
                victims[slot].kill()
                killed += 1
                victims[slot] = (
                    stack.start_consumer(f"whout-consumer-r{killed}", args)
                    if pool == "consumer"
                    else webhook_worker(10 + killed)
                )
            time.sleep(max(0.0, stopped + redis_seconds - time.monotonic()))
            redis.start()
            timings["redis stopped"] = time.monotonic() - stopped
            # (c) once the workers post again, the receiver answers 503, then hangs past the
            # sender's timeout.
            posted = len(receiver.accepted)
            wait_until(lambda: len(receiver.accepted) > posted, timeout=30)
            receiver.mode = "503"
            time.sleep(receiver_seconds / 2)
            receiver.mode = "hang"
            time.sleep(receiver_seconds / 2)
            receiver.mode = "ok"

        def settled() -> bool:
            return stack.depth() == 0 and stack.depth(stack.events_queue_url) == 0

        assert wait_until(settled, timeout=deadline_seconds, interval=1.0), "queues did not drain"
        timings["queues drained after"] = time.monotonic() - began
        expected = expected_events(stack)

        def arrived() -> set[tuple[str, str]]:
            return {(key, kind) for _, key, kind in list(receiver.accepted)}

        wait_until(lambda: expected <= arrived(), timeout=deadline_seconds, interval=1.0)
        timings["all delivered after"] = time.monotonic() - began
        expected = expected_events(stack)  # late events may have landed meanwhile
        assert events.alive(), "the events consumer died"
    finally:
        stack.close()
        redis.stop()
        receiver.close()
    delivered: dict[str, tuple[str, str]] = {}
    ids_per_event: dict[tuple[str, str], set[str]] = {}
    posts = 0
    for webhook_id, key, kind in receiver.accepted:
        delivered[webhook_id] = (key, kind)
        ids_per_event.setdefault((key, kind), set()).add(webhook_id)
        posts += 1
    return OutageResult(
        expected=expected,
        delivered=delivered,
        duplicated=posts - len(delivered),
        missing=sorted(expected - set(delivered.values())),
        ids_per_event=ids_per_event,
        timings=timings,
        kills=killed,
        refused=receiver.refused,
        unsigned=receiver.unsigned,
    )
