"""Our CPU per email: ``EmailPipeline.process`` with in-memory fakes, and with boto3 against moto.

    .venv/bin/python bench/pipeline_cpu.py [--emails 2000] [--aws-emails 300]

CPU is this process's ``time.process_time()``: with fakes it is parse, compose (templates cached, as
in the consumer), render and the journal's rules; with boto3 it adds botocore's request building,
signing and parsing. moto server runs in its own process so its CPU is not counted. Logging is at
WARNING (the bench's setting), so the per-event INFO lines are not in the figure. Targets: at most
1 ms per email with fakes, 3 ms with boto3. ``--profile 25`` prints where the boto3 run's
CPU goes.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import time
import uuid
from collections import Counter

import moto_env  # noqa: F401  (the project on sys.path, Django set up, never real AWS)
from django.conf import settings

from emailops import container
from emailops.core.compose import Composer
from emailops.core.pipeline import Action, EmailPipeline, PipelineSettings
from emailops.core.ports import TemplateMapping
from emailops.core.rendering import Renderer
from emailops.pipeline_build import send_policies
from tests.fakes import DictMappings, DictTemplates, InMemoryJournal, RecordingSender
from tests.support.stack import SAMPLES, MotoServer, ProxyProcess, Stack

FROM = "Pennsieve <support@pennsieve.test>"


def body(i: int) -> str:
    if i % 2:
        return json.dumps(
            {
                "messageId": "dataset-publication-accepted",
                "recipients": [{"email": f"owner{i}@example.com", "name": "Owner"}],
                "context": {
                    "organizationId": 367 if i % 4 == 1 else 1000 + i % 7,
                    "datasetName": f"Dataset {i}",
                    "reviewerName": "Bob",
                    "date": "2026-06-18",
                },
            }
        )
    return json.dumps(
        {
            "messageId": "added-to-team",
            "recipients": [{"email": f"member{i}@example.com"}],
            "context": {"teamName": f"Team {i}", "administrator": "Ada", "host": "h"},
        }
    )


def cpu_per_email(
    pipeline: EmailPipeline, start: int, count: int, warmup: int, calls: Counter | None = None
) -> tuple[float, float]:
    """(CPU ms, wall ms) per email over ``count`` records after ``warmup`` untimed ones."""
    for i in range(start, start + warmup):
        pipeline.process(body(i))
    if calls is not None:
        calls.clear()
    cpu, wall = time.process_time(), time.perf_counter()
    for i in range(start + warmup, start + warmup + count):
        outcome = pipeline.process(body(i))
        assert outcome.action is Action.DELETE, outcome
    return (
        (time.process_time() - cpu) * 1000 / count,
        (time.perf_counter() - wall) * 1000 / count,
    )


def count_calls(calls: Counter) -> None:
    """Count the pipeline's DynamoDB and SES calls by operation (botocore's before-call event),
    on the clients of the container that built it."""

    def count(event_name: str, **_) -> None:
        calls[event_name.split(".", 2)[2]] += 1

    built = container.current()
    for client in (built.client("dynamodb"), built.client("ses", sdk_retries=False)):
        client.meta.events.register("before-call.*.*", count)


class Timed:
    """A send policy with its cost counted: asks, DynamoDB/SES calls, wall and CPU seconds."""

    def __init__(self, policy, calls: Counter) -> None:
        self.policy, self.stage, self.calls = policy, policy.stage, calls
        self.asked = self.made = 0
        self.wall = self.cpu = 0.0

    def check(self, ask):
        before, cpu, wall = sum(self.calls.values()), time.process_time(), time.perf_counter()
        try:
            return self.policy.check(ask)
        finally:
            self.asked += 1
            self.made += sum(self.calls.values()) - before
            self.cpu += time.process_time() - cpu
            self.wall += time.perf_counter() - wall

    def settle(self, now: float, *, everything: bool = False) -> None:
        if hasattr(self.policy, "settle"):
            self.policy.settle(now, everything=everything)


def fake_pipeline() -> EmailPipeline:
    templates = {
        str(p.relative_to(SAMPLES / "templates")): p.read_text()
        for p in (SAMPLES / "templates").rglob("*.html")
    }
    mappings = [
        TemplateMapping(m["MessageId"], m["TemplateFile"], m["Subject"])
        for m in json.loads((SAMPLES / "mappings.json").read_text())
    ]
    return EmailPipeline(
        composer=Composer(
            mappings=DictMappings(*mappings),
            templates=DictTemplates(templates),
            renderer=Renderer(),
        ),
        journal=InMemoryJournal(),
        sender=RecordingSender(),
        settings=PipelineSettings(from_address=FROM, lease_seconds=30),
        policies=send_policies(),
    )


def aws_pipeline(stack: Stack, endpoint: str) -> EmailPipeline:
    """The consumer's own pipeline (worker.wiring) with every client pointed at ``endpoint``."""
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    settings.JOURNAL_TABLE, settings.S3_BUCKET = stack.journal_table, stack.env["S3_BUCKET"]
    settings.EMAIL_SENDER, settings.TEMPLATE_CACHE_SECONDS = FROM, 60
    settings.SES_MAX_SEND_RATE = "0"  # no limiter: CPU, not pacing
    settings.SUPPRESSION_INDEX_REDIS_KEY = f"bench-cpu:{uuid.uuid4().hex}:suppressed"
    container.reset()
    return container.current().build_pipeline(lease_seconds=30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--emails", type=int, default=2000)
    parser.add_argument("--aws-emails", type=int, default=300, help="per boto3 run")
    parser.add_argument(
        "--profile", type=int, default=0, help="print the top N functions of the boto3 run"
    )
    parser.add_argument("--sort", default="tottime", help="pstats order: tottime, cumulative")
    args = parser.parse_args()
    fakes = cpu_per_email(fake_pipeline(), 0, args.emails, warmup=50)
    moto = MotoServer()
    proxy = None
    profiler = None
    calls: Counter = Counter()
    try:
        stack = Stack(
            moto, queue="bench-cpu", journal_table="bench-cpu-journal", bucket="bench-cpu"
        )
        # moto closes every connection, so straight to moto each call pays for a new one; through
        # the keep-alive proxy (its own process) connections are reused, as they are with AWS.
        direct = cpu_per_email(aws_pipeline(stack, moto.url), 0, args.aws_emails, warmup=20)
        proxy = ProxyProcess(moto.url)
        pipeline = aws_pipeline(stack, proxy.url)
        count_calls(calls)
        timed = [Timed(policy, calls) for policy in pipeline.policies]
        pipeline.policies = tuple(timed)
        # CPU time, not wall: waits on the socket are moto's time, not ours.
        profiler = cProfile.Profile(time.process_time) if args.profile else None
        if profiler:
            profiler.enable()
        aws = cpu_per_email(pipeline, 100_000, args.aws_emails, warmup=20, calls=calls)
        if profiler:
            profiler.disable()
    finally:
        os.environ.pop("AWS_ENDPOINT_URL", None)
        if proxy:
            proxy.stop()
        moto.stop()
    print("pipeline CPU per email (this process only; moto server's CPU not counted)")
    print(f"{'':30}{'CPU ms':>9}{'wall ms':>9}{'target':>10}")
    print(f"{f'in-memory fakes ({args.emails})':30}{fakes[0]:9.3f}{fakes[1]:9.3f}{'<= 1 ms':>10}")
    print(f"{'boto3, kept connections':30}{aws[0]:9.3f}{aws[1]:9.3f}{'<= 3 ms':>10}")
    print(f"{'boto3, a connection per call':30}{direct[0]:9.3f}{direct[1]:9.3f}")
    per_email = ", ".join(f"{op} {n / args.aws_emails:.2f}" for op, n in sorted(calls.items()))
    print(f"  DynamoDB and SES calls per email with boto3: {per_email}")
    print("  per send policy (boto3, kept connections; warm-up included): asked, per ask")
    for t in timed:
        n = max(1, t.asked)
        print(
            f"    {type(t.policy).__name__:18} {t.asked:5}  calls {t.made / n:4.2f}  "
            f"wall {t.wall * 1000 / n:6.2f} ms  CPU {t.cpu * 1000 / n:6.3f} ms"
        )
    if profiler:
        print(
            f"top {args.profile} by own time (boto3, kept connections; profiler overhead included):"
        )
        pstats.Stats(profiler).sort_stats(args.sort).print_stats(args.profile)


if __name__ == "__main__":
    main()
