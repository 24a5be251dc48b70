"""The consumer's stats line, Prometheus metrics and health."""

from __future__ import annotations

import logging
import socket
import urllib.request

from worker.stats import ConsumerStats, Health, serve_metrics, stats_line_fields


def test_stats_line_reports_totals_and_the_rate_over_the_interval():
    before = ConsumerStats(sent=10, rate_wait_seconds=1.0)
    now = ConsumerStats(received=50, sent=70, retried=2, dead_lettered=1, rate_wait_seconds=4.5)
    fields = stats_line_fields(now, before, 30.0, in_flight=7)
    assert fields == {
        "received": 50,
        "sent": 70,
        "retried": 2,
        "deadLettered": 1,
        "waiting": 0,
        "inFlight": 7,
        "emailsPerSecond": 2.0,
        "rateLimitWaitSeconds": 3.5,
    }


def test_a_configuration_fault_is_logged_once_a_minute_until_recovery(caplog):
    clock = [0.0]
    health = Health(clock=lambda: clock[0])
    with caplog.at_level(logging.INFO, logger="worker.consumer"):
        for t in (0, 10, 59, 61):
            clock[0] = t
            health.fault_seen("verify the sender", "MessageRejected: not verified")
        assert not health.healthy
        health.record_done()
    lines = [r.getMessage() for r in caplog.records]
    faults = [line for line in lines if "configuration_fault" in line]
    assert len(faults) == 2 and 'fix="verify the sender"' in faults[0]
    assert health.healthy and any("consumer.recovered" in line for line in lines)


def test_metrics_are_served_for_prometheus():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    stats = ConsumerStats(received=3, sent=2)
    health = Health()
    health.healthy = False
    serve_metrics(port, stats, health, in_flight=lambda: 5)
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    assert "emailops_consumer_received_total 3.0" in body
    assert "emailops_consumer_sent_total 2.0" in body
    assert "emailops_consumer_in_flight 5.0" in body
    assert "emailops_consumer_healthy 0.0" in body
