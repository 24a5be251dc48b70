"""What a running consumer tells its operators: counters, a stats line every 30 s, Prometheus
metrics, and its health (a configuration fault makes it unhealthy until records go out again)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from typing import Self

from emailops.core.events import EventLog

__all__ = [
    "ConsumerStats",
    "Counters",
    "EventsStats",
    "Health",
    "serve_metrics",
    "stats_line_fields",
]

logger = logging.getLogger("worker.consumer")


@dataclass
class Counters:
    """A consumer's counters, added to from many threads at once."""

    received: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def add(self, **deltas: float) -> None:
        with self._lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)

    def copy(self) -> Self:
        with self._lock:
            return type(self)(**{f.name: getattr(self, f.name) for f in fields(self)})


@dataclass
class ConsumerStats(Counters):
    deleted: int = 0
    sent: int = 0
    retried: int = 0
    waiting: int = 0
    dead_lettered: int = 0
    refreshed: int = 0  # re-enqueued before the queue's maxReceiveCount could dead-letter them
    rate_wait_seconds: float = 0.0


@dataclass
class EventsStats(Counters):
    applied: int = 0
    duplicates: int = 0
    stored: int = 0
    retried: int = 0
    dead_lettered: int = 0


def stats_line_fields(
    now: ConsumerStats, before: ConsumerStats, seconds: float, in_flight: int
) -> dict[str, object]:
    """The periodic stats line: totals, plus rates over the last interval."""
    return {
        "received": now.received,
        "sent": now.sent,
        "retried": now.retried,
        "deadLettered": now.dead_lettered,
        "waiting": now.waiting,
        "inFlight": in_flight,
        "emailsPerSecond": round((now.sent - before.sent) / seconds, 2) if seconds else 0,
        "rateLimitWaitSeconds": round(now.rate_wait_seconds - before.rate_wait_seconds, 2),
    }


class Health:
    """Healthy until a configuration fault; healthy again once a record goes out. The fault is
    logged as one clear ERROR a minute (naming it and the fix), not once per record."""

    def __init__(self, *, every: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.every = every
        self.clock = clock
        self.healthy = True
        self.fault = ""
        self.dead_thread = ""  # a thread died: unhealthy for good (the process must restart)
        self._logged_at: float | None = None
        self._lock = threading.Lock()

    def fault_seen(self, fault: str, reason: str) -> None:
        with self._lock:
            now = self.clock()
            due = self._logged_at is None or now - self._logged_at >= self.every
            if due or fault != self.fault:
                self._logged_at = now
                EventLog(logger).error(
                    "consumer.configuration_fault",
                    fault=reason,
                    fix=fault,
                    consequence="records wait on the queue; nothing is FAILED or dead-lettered",
                )
            self.healthy, self.fault = False, fault

    def thread_died(self, name: str, *, fault: str = "") -> None:
        """A thread died (or hung, says ``fault``)."""
        with self._lock:
            self.healthy, self.dead_thread = False, name
            self.fault = fault or f"thread {name} died"

    def record_done(self) -> None:
        if self.healthy or self.dead_thread:
            return
        with self._lock:
            if not self.healthy and not self.dead_thread:
                EventLog(logger).info("consumer.recovered", fault=self.fault)
                self.healthy, self.fault, self._logged_at = True, "", None


def serve_metrics(
    port: int,
    stats: ConsumerStats,
    health: Health,
    in_flight: Callable[[], int],
    reputation: Callable[[], tuple[dict, list[dict]]] | None = None,
) -> None:
    """Serve the same figures as Prometheus metrics on ``port`` (a daemon thread)."""
    from prometheus_client import CollectorRegistry, start_http_server
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    class _Collector:
        def collect(self) -> Iterator[object]:
            snap = stats.copy()
            for name, help_text in (
                ("received", "records received"),
                ("deleted", "records finished and deleted"),
                ("sent", "emails SES accepted"),
                ("retried", "records re-enqueued after transient trouble"),
                ("waiting", "records put back to wait (a lease, a fault, the quota)"),
                ("dead_lettered", "records moved to the dead-letter queue"),
                ("refreshed", "records re-enqueued before maxReceiveCount"),
                ("rate_wait_seconds", "seconds spent waiting for the shared send rate"),
            ):
                yield CounterMetricFamily(
                    f"emailops_consumer_{name}", help_text, value=getattr(snap, name)
                )
            yield GaugeMetricFamily(
                "emailops_consumer_in_flight", "records held now", value=in_flight()
            )
            yield GaugeMetricFamily(
                "emailops_consumer_healthy",
                "0 while a configuration fault stops sending, or after a thread died",
                value=1 if health.healthy else 0,
            )
            if reputation is not None:
                yield from _reputation_metrics(reputation)

    registry = CollectorRegistry()
    registry.register(_Collector())
    start_http_server(port, addr="0.0.0.0", registry=registry)


def _reputation_metrics(read: Callable[[], tuple[dict, list[dict]]]) -> Iterator[object]:
    """The guard's last evaluation (rates per scope) and the pauses in force, as gauges for the
    alert rules in docs/prometheus/reputation-alerts.yml. Nothing while Redis is unreachable."""
    from prometheus_client.core import GaugeMetricFamily

    try:
        evaluation, entries = read()
    except Exception as exc:  # a scrape must not fail for the guard's state
        EventLog(logger).warning("metrics.reputation_unavailable", error=str(exc))
        return
    rates = {
        "bounce_rate": GaugeMetricFamily(
            "emailops_reputation_bounce_rate",
            "hard bounces / delivered-or-bounced over REPUTATION_WINDOW_HOURS",
            labels=["scope"],
        ),
        "complaint_rate": GaugeMetricFamily(
            "emailops_reputation_complaint_rate",
            "complaints / delivered over REPUTATION_WINDOW_HOURS",
            labels=["scope"],
        ),
        "volume": GaugeMetricFamily(
            "emailops_reputation_volume",
            "delivered-or-bounced sends over the window (rates are judged from REPUTATION_MIN_VOLUME)",
            labels=["scope"],
        ),
    }
    for scope, figures in evaluation.items():
        rates["bounce_rate"].add_metric([scope], figures.get("bounce_rate", 0))
        rates["complaint_rate"].add_metric([scope], figures.get("complaint_rate", 0))
        volume = figures.get("delivered", 0) + figures.get("bounced", 0)
        rates["volume"].add_metric([scope], volume)
    yield from rates.values()
    held = GaugeMetricFamily(
        "emailops_reputation_held",
        "1 for each pause (mode=pause) or slowdown (mode=slow) the guard holds",
        labels=["priority", "organization", "mode", "source"],
    )
    for entry in entries:
        labels = [
            str(entry.get("priority")),
            str(entry.get("organization") or "account"),
            str(entry.get("mode")),
            str(entry.get("source")),
        ]
        held.add_metric(labels, 1)
    yield held
