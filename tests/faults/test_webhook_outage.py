"""Issue 32 point 2: webhooks at least once through a broker outage, kills and a failing receiver
(tests/faults/webhook_outage.py has the run). Every event the journal implies (email.sent per SENT
row, one per Delivery, Bounce and Complaint on its timeline) reaches the receiver, signed, each
under one stable webhook-id; the run prints expected / delivered / duplicated.

| variable | CI default | full (issue 32) |
| --- | --- | --- |
| FAULTS_WEBHOOK_EMAILS | 45 | 500 |
| FAULTS_WEBHOOK_REDIS_SECONDS | 12 | 60 |
| FAULTS_WEBHOOK_RECEIVER_SECONDS | 8 | 30 |
| FAULTS_WEBHOOK_KILLS | 3 | 10 |
"""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import skip_or_fail
from tests.faults.conftest import knob
from tests.faults.webhook_outage import run_outage

pytestmark = pytest.mark.faults


def test_every_journaled_event_arrives_at_least_once_under_one_signed_id(
    moto_server, tmp_path, seed
):
    if shutil.which("redis-server") is None:
        skip_or_fail("redis-server is not installed (the run stops a private one)")
    emails = knob("FAULTS_WEBHOOK_EMAILS", 45)
    result = run_outage(
        moto_server,
        tmp_path,
        emails=emails,
        redis_seconds=knob("FAULTS_WEBHOOK_REDIS_SECONDS", 12),
        receiver_seconds=knob("FAULTS_WEBHOOK_RECEIVER_SECONDS", 8),
        kills=knob("FAULTS_WEBHOOK_KILLS", 3),
        seed=seed,
        deadline_seconds=150 + emails,  # the full run (500) takes minutes
    )
    print(
        f"\n--- webhooks through a broker outage, kills and a failing receiver\n{result.report()}"
    )
    assert result.expected, "the run journaled nothing"
    assert result.unsigned == 0, "a post did not verify with the endpoint's secret"
    assert result.missing == []
    assert all(len(ids) == 1 for ids in result.ids_per_event.values()), "an event changed id"
