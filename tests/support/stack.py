"""A local AWS stack of real processes: moto server, optionally behind the fault proxy, bootstrapped
with the sample templates, and ``manage.py consume_emails`` / ``consume_ses_events`` processes the
harness starts, stops and kills.

The one implementation behind the end-to-end tests (the ``e2e_stack`` fixture in tests/conftest.py),
the fault suite and the benchmarks. Everything is bounded: every wait has a deadline and every child
process is killed by whoever started it (``Stack.close`` kills the ones it knows).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from types import SimpleNamespace

import boto3

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "emailops" / "data" / "samples"
MANAGE = [sys.executable, str(ROOT / "manage.py")]
ACCOUNT = "123456789012"  # moto's default account

__all__ = [
    "ChildProcess",
    "ConsumerProcess",
    "MotoServer",
    "ProxyProcess",
    "Stack",
    "consumer_flags",
    "free_port",
    "wait_until",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(predicate: Callable[[], bool], *, timeout: float, interval: float = 0.2) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` seconds pass; returns whether it held."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


class MotoServer:
    """moto's server in its own process, so its CPU and GIL are not the harness's; its DynamoDB
    conditional writes are atomic, as DynamoDB's are (tests/support/moto_server.py)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.moto_server",
                "-H",
                "127.0.0.1",
                "-p",
                str(self.port),
            ],
            cwd=ROOT,
            # Stack.purge may empty a queue more than once a minute (real SQS refuses; tests need not).
            env={**os.environ, "MOTO_SQS_ENFORCE_STRICT_QUEUE_PURGE_BEHAVIOUR": "false"},
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

        def ready() -> bool:
            if self.process.poll() is not None:
                raise RuntimeError(f"moto server exited with {self.process.returncode}")
            with socket.socket() as sock:
                return sock.connect_ex(("127.0.0.1", self.port)) == 0

        if not wait_until(ready, timeout=30, interval=0.1):
            self.stop()
            raise RuntimeError("moto server did not start within 30 s")

    def url_for(self, service: str) -> str:
        return self.url

    def routes(self) -> dict[str, str]:
        return {}

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.log.close()


class MotoPerService:
    """moto as one process per service (SQS, DynamoDB, the rest), as AWS's services are separate.
    One moto process can use one core at most (its GIL): on a small machine it becomes the
    bottleneck that a benchmark measures instead of the consumer. Reached through the fault
    proxy, which routes each call by its SigV4 service (``AwsProxy(routes=...)``)."""

    def __init__(self, own: tuple[str, ...] = ("sqs", "dynamodb")) -> None:
        self.rest = MotoServer()
        self.servers: dict[str, MotoServer] = {}
        try:
            for service in own:
                self.servers[service] = MotoServer()
        except Exception:
            self.stop()
            raise
        self.url = self.rest.url

    def url_for(self, service: str) -> str:
        return self.servers[service].url if service in self.servers else self.rest.url

    def routes(self) -> dict[str, str]:
        return {service: server.url for service, server in self.servers.items()}

    def processes(self) -> list[subprocess.Popen]:
        return [self.rest.process, *(server.process for server in self.servers.values())]

    def stop(self) -> None:
        for server in [self.rest, *self.servers.values()]:
            server.stop()


class ProxyProcess:
    """The fault proxy, fault-free, in its own process (see ``aws_proxy.main``)."""

    def __init__(self, upstream: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.aws_proxy", upstream],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.url = (self.process.stdout.readline() if self.process.stdout else "").strip()
        if not self.url.startswith("http://"):
            self.stop()
            raise RuntimeError("the proxy process did not start")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)


@functools.cache
def consumer_flags() -> frozenset[str]:
    """The long options ``consume_emails`` accepts on this checkout (``--concurrency`` or not)."""
    result = subprocess.run(
        [*MANAGE, "consume_emails", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "emailops.settings", "DJANGO_DEBUG": "true"},
        check=True,
    )
    return frozenset(word.strip(",[]") for word in result.stdout.split() if word.startswith("--"))


class ChildProcess:
    """A process the harness starts: stderr to a log file, stdout to another (never a full pipe)."""

    def __init__(self, argv: list[str], env: dict[str, str], *, name: str) -> None:
        self.name = name
        self.log_path = Path(tempfile.mkstemp(prefix=f"{name}-", suffix=".log")[1])
        self.stdout_path = self.log_path.with_suffix(".out")
        self.started = time.time()  # before the exec: start-up is measured from here
        with self.log_path.open("wb") as log, self.stdout_path.open("wb") as out:
            self.process = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=out, stderr=log)
        self.pid = self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def rss_kib(self) -> int | None:
        """VmRSS of the process, from /proc (None once it has gone)."""
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:
            return None
        line = next((x for x in status.splitlines() if x.startswith("VmRSS:")), "")
        return int(line.split()[1]) if line else None

    def kill(self) -> float:
        """SIGKILL; returns when it was sent."""
        at = time.time()
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)
        return at

    def terminate(self, timeout: float = 30) -> int:
        """SIGTERM (a graceful stop), then SIGKILL if it is still there after ``timeout``."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return self.process.wait(timeout=10)

    def wait(self, timeout: float) -> int:
        return self.process.wait(timeout=timeout)

    def output(self) -> str:
        """What it logged (stderr), then what it printed (stdout)."""
        return self.log_path.read_text(errors="replace") + self.stdout()

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def cleanup(self, *, keep_log: bool = False) -> None:
        if self.alive():
            self.kill()
        if not keep_log:
            self.log_path.unlink(missing_ok=True)
            self.stdout_path.unlink(missing_ok=True)


class ConsumerProcess(ChildProcess):
    """One ``manage.py consume_emails`` (or ``consume_ses_events``) process."""

    def __init__(
        self,
        env: dict[str, str],
        args: Iterable[str],
        *,
        name: str,
        command: str = "consume_emails",
    ) -> None:
        super().__init__(
            [*MANAGE, command, *args], {**env, "AWS_SDK_UA_APP_ID": name}, name=f"consumer-{name}"
        )
        self.name = name


# The migrated SQLite template of this process (Stack.console_database).
_MIGRATED: dict[str, Path] = {}


class Stack:
    """moto server (+ an endpoint in front of it, e.g. the fault proxy) with the service's
    resources. ``endpoint`` is what the consumers use; the harness's own clients go to moto
    directly, so they are neither faulted nor recorded. ``events_queue`` also sets up delivery
    events (events queue + DLQ, unmatched-events table, SNS topic, configuration set)."""

    def __init__(
        self,
        moto: MotoServer,
        *,
        endpoint: str | None = None,
        queue: str = "email-service-queue",
        journal_table: str = "email-journal",
        bucket: str = "emailops-stack",
        visibility_timeout: int = 30,
        max_receive_count: int = 3,
        events_queue: str | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.moto = moto
        self.endpoint = endpoint or moto.url
        self.queue_url = f"{self.endpoint}/{ACCOUNT}/{queue}"
        self.events_queue_url = f"{self.endpoint}/{ACCOUNT}/{events_queue}" if events_queue else ""
        self.journal_table = journal_table
        self.env = {
            **{k: v for k, v in os.environ.items() if k not in ("AWS_PROFILE", "DATABASE_URL")},
            "DJANGO_SETTINGS_MODULE": "emailops.settings",
            "DJANGO_DEBUG": "true",  # the local profile: the development secret key is fine
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "TEMPLATES_TABLE": "email-message-templates",
            "JOURNAL_TABLE": journal_table,
            "S3_BUCKET": bucket,
            "EMAIL_SENDER": "Pennsieve <support@pennsieve.test>",
            "EMAIL_REPLY_TO": "help@pennsieve.test",
            "EMAIL_SERVICE_QUEUE_URL": self.queue_url,
            **({"SES_EVENTS_QUEUE_URL": self.events_queue_url} if events_queue else {}),
            "LOG_LEVEL": os.environ.get("LOG_LEVEL", "WARNING"),
            # Its own suppression set, send-rate bucket and reputation flags: stacks (and test
            # processes running side by side) share one Redis, not one table.
            "SES_RATE_REDIS_KEY": f"emailops-stack:{uuid.uuid4().hex}:ses-rate",
            # No spam score in the draft checks (~0.4 s a render): tests/settings.py's choice too.
            "SPAMD_ADDRESS": "",
            # The send guard off: these stacks send hundreds a minute to one messageId, which the
            # Go-compatible caps (300, 120 a minute) would hold; its own tests turn it on.
            "SEND_RATE_LIMIT_PER_MINUTE": "0",
            "PER_MESSAGE_RATE_LIMIT_PER_MINUTE": "0",
            "LOOP_LIMIT_PER_HOUR": "0",
            **(extra_env or {}),
        }
        self.consumers: list[ChildProcess] = []
        self.sqs = self.client("sqs")
        self.dynamodb = self.client("dynamodb")
        # The three commands in one process: each start of manage.py costs a second or two.
        commands = [
            [
                "bootstrap_aws",
                "--visibility-timeout",
                str(visibility_timeout),
                "--max-receive-count",
                str(max_receive_count),
            ],
            ["load_templates", str(SAMPLES / "templates")],
            ["load_template_mappings", str(SAMPLES / "mappings.json")],
        ]
        self.manage(
            "shell",
            "-c",
            "from django.core.management import call_command\n"
            f"for command in {commands!r}:\n"
            "    call_command(*command)",
        )

    def console_database(self, path: Path) -> dict[str, str]:
        """A migrated SQLite console database at ``path``; returns the environment naming it.
        The migrations run once per test process, into a template the later calls copy."""
        if "template" not in _MIGRATED:
            template = Path(tempfile.mkdtemp(prefix="emailops-migrated-")) / "db.sqlite3"
            self.manage(
                "migrate", "--noinput", "-v", "0", env={"DATABASE_URL": f"sqlite:///{template}"}
            )
            atexit.register(shutil.rmtree, template.parent, ignore_errors=True)
            _MIGRATED["template"] = template
        shutil.copyfile(_MIGRATED["template"], path)
        return {"DATABASE_URL": f"sqlite:///{path}"}

    def client(self, service: str):
        """A boto3 client straight to moto (bypassing any proxy)."""
        return boto3.client(
            service,
            endpoint_url=self.moto.url_for(service),
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    def manage(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess:
        """``manage.py`` with this stack's environment (plus ``env``); fails unless it exits 0."""
        result = subprocess.run(
            [*MANAGE, *args],
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if result.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{result.stderr}")
        return result

    def consume(
        self, command: str = "consume_emails", env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess:
        """One ``consume_emails`` (or ``consume_ses_events``) run until its queue is empty. No
        long poll: moto's receive answers from the whole queue at once, so an empty answer with
        nothing in flight is the end, and a 1 s wait only made every run a second longer."""
        return self.manage(command, "--until-empty", "--wait-time", "0", env=env, timeout=180)

    @property
    def dlq_url(self) -> str:
        return self.queue_url + "-dlq"

    def direct(self, url: str) -> str:
        """A queue URL as moto knows it (the consumers' URL names the proxy)."""
        return url.replace(self.endpoint, self.moto.url_for("sqs"), 1)

    def enqueue(self, bodies: Iterable[str | dict]) -> int:
        if isinstance(bodies, str | dict):
            raise TypeError("enqueue takes a list of bodies")
        batch: list[dict] = []
        count = 0
        for body in bodies:
            text = body if isinstance(body, str) else json.dumps(body)
            batch.append({"Id": str(len(batch)), "MessageBody": text})
            if len(batch) == 10:
                count += self._send_batch(batch)
                batch = []
        if batch:
            count += self._send_batch(batch)
        return count

    def _send_batch(self, entries: list[dict]) -> int:
        response = self.sqs.send_message_batch(
            QueueUrl=self.direct(self.queue_url), Entries=entries
        )
        if response.get("Failed"):
            raise RuntimeError(f"enqueue failed: {response['Failed']}")
        return len(entries)

    def depth(self, url: str | None = None) -> int:
        """Messages on the queue: visible, in flight and delayed."""
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.direct(url or self.queue_url),
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            ],
        )["Attributes"]
        return sum(int(v) for v in attributes.values())

    def purge(self) -> None:
        """Empty this stack's queues and dead-letter queues (journal rows and sent emails stay)."""
        for url in filter(None, (self.queue_url, self.events_queue_url)):
            for queue_url in (url, url + "-dlq"):
                self.sqs.purge_queue(QueueUrl=self.direct(queue_url))

    def row(self, key: str) -> dict:
        """The journal row ``key``, attribute → plain value (it must be there)."""
        item = self.item(self.journal_table, {"Id": key})
        assert item, f"no journal row {key}"
        return item

    def item(self, table: str, key: dict[str, str]) -> dict | None:
        """One DynamoDB item read consistently, attribute → plain value; None if there is none."""
        item = self.dynamodb.get_item(
            TableName=table, Key={k: {"S": v} for k, v in key.items()}, ConsistentRead=True
        ).get("Item")
        return {k: next(iter(v.values())) for k, v in item.items()} if item else None

    def put_row(self, **attributes: str | int) -> None:
        """Write a journal row (ints as numbers, the rest as strings)."""
        self.dynamodb.put_item(
            TableName=self.journal_table,
            Item={
                k: {"N": str(v)} if isinstance(v, int) else {"S": v} for k, v in attributes.items()
            },
        )

    def sent_emails(self) -> list[SimpleNamespace]:
        """Every email moto's SES accepted (``source``, ``subject``, ``body``, ``destinations``),
        read from moto's model API since moto runs in another process: SendEmail's, oldest
        first, then SendRawEmail's (``raw_data``; what carries List-Unsubscribe), whose
        ``destinations`` are given the same ``{"ToAddresses": [...]}`` shape."""
        models_url = f"{self.moto.url_for('ses')}/moto-api/data.json"
        with urllib.request.urlopen(models_url, timeout=30) as reply:
            models = json.load(reply).get("ses", {})
        raw = [
            SimpleNamespace(**m | {"destinations": {"ToAddresses": sorted(set(m["destinations"]))}})
            for m in models.get("RawMessage", [])
        ]
        return [SimpleNamespace(**m) for m in models.get("Message", [])] + raw

    def sent_to(self, address: str) -> list[SimpleNamespace]:
        return [
            m
            for m in self.sent_emails()
            if any(address in d for d in m.destinations.get("ToAddresses", []))
        ]

    def journal_statuses(self) -> dict[str, str]:
        """Journal key → Status, for every row of this stack's journal table."""
        statuses: dict[str, str] = {}
        kwargs: dict = {
            "TableName": self.journal_table,
            "ProjectionExpression": "Id, #s",
            "ExpressionAttributeNames": {"#s": "Status"},
        }
        for _ in range(10_000):  # bounded: pages of up to 1 MB
            page = self.dynamodb.scan(**kwargs)
            statuses.update({i["Id"]["S"]: i.get("Status", {}).get("S", "") for i in page["Items"]})
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return statuses

    def dead_letters(self, *, receives: int = 5) -> list[dict]:
        """Messages on the dead-letter queue (a few receives: SQS returns a sample per call)."""
        found: dict[str, dict] = {}
        for _ in range(receives):
            response = self.sqs.receive_message(
                QueueUrl=self.direct(self.dlq_url),
                MaxNumberOfMessages=10,
                MessageAttributeNames=["All"],
                MessageSystemAttributeNames=["ApproximateReceiveCount"],
                VisibilityTimeout=0,
            )
            found.update({m["MessageId"]: m for m in response.get("Messages", [])})
        return list(found.values())

    def describe_dead_letters(self, limit: int = 5) -> str:
        """One line per dead letter: its reason, or that SQS's redrive moved it without one."""
        lines = []
        for message in self.dead_letters()[:limit]:
            reason = message.get("MessageAttributes", {}).get("FailureReason", {})
            lines.append(
                f"  {message['Body'][:80]} -> "
                + (
                    reason.get("StringValue", "")[:200]
                    or "no FailureReason (SQS's maxReceiveCount)"
                )
            )
        return "\n".join(lines)

    def consumer_args(self, *, concurrency: int | None = None, **options: object) -> list[str]:
        """Arguments for consume_emails; options the checked-out consumer lacks are left out."""
        known = consumer_flags()
        args: list[str] = []
        if concurrency is not None:
            options["concurrency"] = concurrency
        for name, value in options.items():
            flag = "--" + name.replace("_", "-")
            if flag not in known or value is False or value is None:
                continue
            args += [flag] if value is True else [flag, str(value)]
        return args

    def start_consumer(
        self,
        name: str,
        args: Iterable[str],
        env: dict[str, str] | None = None,
        *,
        command: str = "consume_emails",
    ) -> ConsumerProcess:
        process = ConsumerProcess({**self.env, **(env or {})}, args, name=name, command=command)
        self.consumers.append(process)
        return process

    def start_process(
        self, name: str, argv: list[str], env: dict[str, str] | None = None
    ) -> ChildProcess:
        """Any other child (a celery worker, say) with this stack's environment; ``close`` kills it."""
        process = ChildProcess(argv, {**self.env, **(env or {})}, name=name)
        self.consumers.append(process)
        return process

    def counted(self, counter: str = "sent") -> int:
        """The reputation counters' account-wide ``counter``, every hour: one Query, no Scan."""
        items = self.client("dynamodb").query(
            TableName=self.env.get("STATS_TABLE", "email-stats"),
            KeyConditionExpression="#scope = :account",
            ExpressionAttributeNames={"#scope": "Scope"},
            ExpressionAttributeValues={":account": {"S": "account"}},
        )["Items"]
        return sum(int(item.get(counter, {"N": "0"})["N"]) for item in items)

    def close(self) -> None:
        """Kill every consumer started here; ``KEEP_CONSUMER_LOGS=1`` keeps (and lists) their logs."""
        keep = os.environ.get("KEEP_CONSUMER_LOGS") == "1"
        for process in self.consumers:
            process.cleanup(keep_log=keep)
        if keep and self.consumers:
            logs = (str(path) for p in self.consumers for path in (p.log_path, p.stdout_path))
            print(f"consumer logs: {' '.join(logs)}")
        self.consumers.clear()
