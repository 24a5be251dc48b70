"""Consumer throughput and AWS calls per record, template cache off vs on, side by side.

Runs the real consumer (SQS → DynamoDB → S3 → SES adapters) against moto in-process, so the
figures measure our code plus moto, not AWS latency; the calls-per-record column is what carries
over to production. Usage: python bench/consumer_throughput.py [--records 200]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import threading
import time

import moto_env
from django.conf import settings
from django.core.management import call_command
from moto import mock_aws

from emailops import container
from emailops.aws import provision
from emailops.aws.clients import AwsClients
from emailops.container import Container
from worker.consumer import Consumer
from worker.wiring import build_consumer

SAMPLES = moto_env.ROOT / "emailops" / "data" / "samples"


def request(i: int) -> str:
    org = {"organizationId": 367} if i % 2 else {"organizationId": 1000 + i % 7}
    return json.dumps(
        {
            "messageId": "dataset-publication-accepted",
            "recipients": [{"email": f"owner{i}@example.com"}, {"email": f"co{i}@example.com"}],
            "context": {
                **org,
                "datasetName": f"Dataset {i}",
                "reviewerName": "Bob",
                "date": "2026-06-18",
            },
        }
    )


def load_stack(records: int) -> None:
    """Inside ``mock_aws``: the tables, the queue, the bucket, the sample templates and mappings,
    and ``records`` requests on the queue."""
    settings.JOURNAL_TABLE, settings.S3_BUCKET = "email-journal", "emailops-bench"
    settings.EMAIL_SENDER = "Bench <bench@example.com>"
    quiet = lambda _line: None  # noqa: E731
    # Clients of their own: the container is built below, once the queue's URL is set.
    clients = AwsClients()
    dynamodb, sqs = (
        clients.client("dynamodb", region="us-east-1"),
        clients.client("sqs", region="us-east-1"),
    )
    provision.ensure_templates_table(dynamodb, settings.TEMPLATES_TABLE, quiet)
    provision.ensure_journal_table(dynamodb, settings.JOURNAL_TABLE, quiet)
    provision.ensure_suppression_table(dynamodb, settings.SUPPRESSION_TABLE, quiet)
    provision.ensure_tombstone_table(dynamodb, settings.ERASURE_TOMBSTONE_TABLE, quiet)
    provision.ensure_preferences_table(dynamodb, settings.PREFERENCES_TABLE, quiet)
    provision.ensure_stats_table(dynamodb, settings.STATS_TABLE, quiet)
    settings.EMAIL_SERVICE_QUEUE_URL = provision.ensure_queue(sqs, "bench", quiet)
    container.current().template_store.create_bucket()
    container.current().sender.verify_sender("bench@example.com")
    devnull = open(os.devnull, "w")  # noqa: SIM115
    call_command("load_templates", str(SAMPLES / "templates"), stdout=devnull)
    call_command("load_template_mappings", str(SAMPLES / "mappings.json"), stdout=devnull)
    for start in range(0, records, 10):
        sqs.send_message_batch(
            QueueUrl=settings.EMAIL_SERVICE_QUEUE_URL,
            Entries=[
                {"Id": str(i), "MessageBody": request(i)}
                for i in range(start, min(records, start + 10))
            ],
        )


def consumer_and_its_container(*, concurrency: int) -> tuple[Consumer, Container]:
    """build_consumer, and the container of its own it runs on (Container.with_connections's)."""
    sized, made = Container.with_connections, []

    def keep(self: Container, connections: int) -> Container:
        made.append(sized(self, connections))
        return made[-1]

    Container.with_connections = keep  # type: ignore[method-assign]
    try:
        consumer = build_consumer(
            adapters=container.current(), concurrency=concurrency, allow_no_dead_letter_queue=True
        )
    finally:
        Container.with_connections = sized  # type: ignore[method-assign]
    [built] = made
    return consumer, built


def run(records: int, cache_seconds: int) -> dict:
    with mock_aws():
        container.reset()
        settings.TEMPLATE_CACHE_SECONDS = cache_seconds
        load_stack(records)
        consumer, built = consumer_and_its_container(concurrency=8)
        calls: collections.Counter[str] = collections.Counter()

        def count(event_name, **_):
            calls[event_name.split(".", 2)[2]] += 1

        # The clients the consumer uses: its container's, made by build_consumer with their
        # pools sized (the general ones, the send's without SDK retries, the lease ones).
        region = built.config.aws.region
        clients = {built.client(s) for s in ("dynamodb", "sqs", "ses")}
        clients |= {built.client("ses", sdk_retries=False), built.template_store.client}
        clients |= {built.clients.lease_client(s, region=region) for s in ("dynamodb", "sqs")}
        for client in clients:
            client.meta.events.register("before-call.*.*", count)
        started = time.perf_counter()
        stats = consumer.run(stop=threading.Event(), until_empty=True, wait_time=0)
        elapsed = time.perf_counter() - started
        assert stats.deleted == records, stats
        return {"seconds": elapsed, "calls": calls, "records": records}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=200)
    args = parser.parse_args()
    off, on = run(args.records, 0), run(args.records, 60)
    print(f"consumer, {args.records} records x 2 recipients, moto in-process")
    print(f"{'':28}{'cache off':>12}{'cache on':>12}{'ratio':>8}")
    rate_off, rate_on = args.records / off["seconds"], args.records / on["seconds"]
    print(f"{'records/s':28}{rate_off:12.1f}{rate_on:12.1f}{rate_on / rate_off:8.2f}")
    for op in sorted(set(off["calls"]) | set(on["calls"])):
        a, b = off["calls"][op] / args.records, on["calls"][op] / args.records
        print(f"{op + ' per record':28}{a:12.2f}{b:12.2f}{(b / a if a else 0):8.2f}")
    total_off = sum(off["calls"].values()) / args.records
    total_on = sum(on["calls"].values()) / args.records
    print(
        f"{'AWS calls per record':28}{total_off:12.2f}{total_on:12.2f}{total_on / total_off:8.2f}"
    )


if __name__ == "__main__":
    main()
