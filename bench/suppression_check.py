"""The suppression check's cost per email that is not suppressed (the common answer), before and
after issue 35's item 2, side by side in one run:

    .venv/bin/python bench/suppression_check.py [--emails 500]

- before: the Redis set of suppressed addresses answered alone (``SMISMEMBER`` on the index
  ``IndexedSuppressionList`` asked; it is gone, the index class is still erasure's);
- after: the shared table, as the Go service reads it (``DynamoSuppressionList.suppression_reason``:
  a strongly consistent ``GetItem`` on the spelling as written, then one on its ``address_key``
  when that differs), for a normalised address and for another spelling.

moto server (through the keep-alive proxy, as connections are kept with AWS) and the local Redis
(``REDIS_URL``). CPU is this process's ``time.process_time()``; wall time is moto's and Redis's
answer too, so it says little about DynamoDB's real latency (a few ms).
"""

from __future__ import annotations

import argparse
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable

import moto_env  # noqa: F401  (the project on sys.path, Django set up, never real AWS)
from django.conf import settings

from emailops.aws.clients import AwsClients
from emailops.aws.suppression import DynamoSuppressionList
from emailops.core.contract import address_key
from emailops.redis.suppression import RedisSuppressionIndex
from tests.support.stack import MotoServer, ProxyProcess, Stack


def measure(
    check: Callable[[str], object], addresses: list[str], calls: Counter
) -> tuple[float, float, float]:
    """(calls, CPU ms, wall ms) per address, after a few untimed ones."""
    for address in addresses[:20]:
        assert not check(address)
    calls.clear()
    cpu, wall = time.process_time(), time.perf_counter()
    for address in addresses:
        assert not check(address), address
    n = len(addresses)
    return (
        sum(calls.values()) / n,
        (time.process_time() - cpu) * 1000 / n,
        (time.perf_counter() - wall) * 1000 / n,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--emails", type=int, default=500)
    parser.add_argument("--suppressed", type=int, default=200, help="rows in the table")
    args = parser.parse_args()
    moto = MotoServer()
    proxy = None
    key = f"bench-suppression:{uuid.uuid4().hex}"
    index = RedisSuppressionIndex.from_url(settings.REDIS_URL, key=key)
    calls: Counter = Counter()
    try:
        Stack(moto, queue="bench-supp", journal_table="bench-supp-journal", bucket="bench-supp")
        proxy = ProxyProcess(moto.url)
        os.environ["AWS_ENDPOINT_URL"] = proxy.url
        dynamodb = AwsClients().client("dynamodb", region=settings.AWS_REGION)
        dynamodb.meta.events.register(
            "before-call.*.*", lambda event_name, **_: calls.update([event_name])
        )
        table = DynamoSuppressionList(dynamodb, settings.SUPPRESSION_TABLE)
        for i in range(args.suppressed):
            table.add(f"gone{i}@example.com", reason="bounce", detail="550", source="b", now=1)
        assert index.rebuild(table.addresses)
        commands = index.client.execute_command

        def counted(*command, **options):
            calls.update(["redis"])
            return commands(*command, **options)

        index.client.execute_command = counted
        plain = [f"member{i}@example.com" for i in range(args.emails)]
        mixed = [f"Member.{i}@Example.com" for i in range(args.emails)]
        rows = {
            "before: the Redis set alone": measure(
                lambda a: index.contains(address_key(a)), plain, calls
            ),
            "after: the table, normalised": measure(table.suppression_reason, plain, calls),
            "after: the table, Mixed@Case": measure(table.suppression_reason, mixed, calls),
        }
    finally:
        os.environ.pop("AWS_ENDPOINT_URL", None)
        index.client.delete(key, f"{key}:epoch")
        if proxy:
            proxy.stop()
        moto.stop()
    print(f"the suppression check, per not-suppressed email ({args.emails} each)")
    print(f"{'':32}{'calls':>7}{'CPU ms':>9}{'wall ms':>9}")
    for name, (n, cpu, wall) in rows.items():
        print(f"{name:32}{n:7.2f}{cpu:9.3f}{wall:9.3f}")


if __name__ == "__main__":
    main()
