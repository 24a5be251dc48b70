"""The fault suite's stack: moto server in its own process (the ``moto_server`` fixture of
tests/conftest.py), the fault proxy in this one, and real ``consume_emails`` processes. Sizes come from the environment so ``make chaos`` can run it long.

| variable | CI default | meaning |
| --- | --- | --- |
| FAULTS_REQUESTS | 300 | requests in the chaos run (every fifth has three recipients) |
| FAULTS_CONSUMERS | 4 | consumer processes |
| FAULTS_CONCURRENCY | 8 | --concurrency of each (when the consumer has the flag) |
| FAULTS_CHAOS_SECONDS | 30 | how long consumers are killed and fault bursts fire |
| FAULTS_DRAIN_SECONDS | 90 | then, the bound on waiting for the queue to drain |
| FAULTS_OUTAGE_SECONDS | 30 | the SES outage (longer than 3 receives of 8 s) |
| FAULTS_SLOW_SES_REQUESTS | 16 | requests in the slow-SES run (7 s sends, 6 s visibility) |
| FAULTS_POISON_REQUESTS | 30 | requests in the poison-state run (every other one poisoned) |
| FAULTS_STOP_RECIPIENTS | 200 | recipients of the request stopped mid-way (2 s per send) |
| FAULTS_WEBHOOK_EMAILS | 45 | emails in the webhook outage run (full: 500; test_webhook_outage.py) |
| FAULTS_WEBHOOK_REDIS_SECONDS | 12 | how long its private broker is stopped (full: 60) |
| FAULTS_WEBHOOK_RECEIVER_SECONDS | 8 | then the receiver answers 503, then hangs (full: 30) |
| FAULTS_WEBHOOK_KILLS | 3 | kill -9s of consumers and webhook workers (full: 10) |
| FAULTS_SEED | random, pinned by .ci/run | the proxy's and the killer's random seed (in pytest's header) |

Consumers log at LOG_LEVEL (WARNING unless set); ``KEEP_CONSUMER_LOGS=1`` keeps their logs.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator

import pytest

from tests.support.aws_proxy import AwsProxy


def knob(name: str, default: int) -> int:
    return int(os.environ.get(name) or default)


@pytest.fixture(scope="session")
def seed() -> int:
    value = knob("FAULTS_SEED", random.randrange(1_000_000))
    print(f"\nfault suite seed: FAULTS_SEED={value}")
    return value


@pytest.fixture
def proxy(moto_server, seed) -> Iterator[AwsProxy]:
    with AwsProxy(moto_server.url, seed=seed) as running:
        yield running
