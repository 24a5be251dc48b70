"""Periodic checks (Celery beat): dead-letter depth and stuck claims (the daily template check and
the reputation guard are the console's, registered in ``monitoring.periodic``).

Each stores its last reading in ``OpsReading`` (the console's index banner reads it; the cache is
per process, the database is shared) and logs an ERROR line when something needs a person.
The dead-letter depth also keeps one reading per hour (``dlq_depth@YYYY-MM-DDTHH``, the deepest
seen that hour) for the dashboard's chart, pruned after ``READING_HISTORY_DAYS`` (35).
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from emailops.core.events import EventLog
from monitoring.models import OpsReading
from monitoring.queues import dead_letter_queues

if TYPE_CHECKING:
    from emailops.aws.sqs import SqsQueue
    from emailops.container import Container

__all__ = [
    "DLQ_DEPTH",
    "HOUR_SEPARATOR",
    "STUCK_CLAIMS",
    "dead_letter_depth_check",
    "reading",
    "stuck_claims_check",
]

log = EventLog(logging.getLogger("monitoring"))
DLQ_DEPTH = "dlq_depth"
STUCK_CLAIMS = "stuck_claims"
HOUR_SEPARATOR = "@"  # dlq_depth@2026-12-01T14: hour names sort in time order
# Days of hourly depth readings kept: the dashboard charts at most a month (was
# OPS_READING_HISTORY_DAYS).
READING_HISTORY_DAYS = 35
_LOGGED_ROWS = 20  # per run; the reading keeps the first 50


def _store(name: str, value: dict[str, Any]) -> OpsReading:
    reading, _ = OpsReading.objects.update_or_create(
        name=name, defaults={"value": value, "at": timezone.now()}
    )
    return reading


def reading(name: str) -> OpsReading | None:
    return OpsReading.objects.filter(name=name).first()


def _store_hourly(name: str, depth: int, *, now: datetime) -> None:
    """Keep the deepest reading of the hour (beat runs one check at a time, so read-then-write is
    safe here), and drop the hours past the history's retention."""
    hour = now.astimezone(UTC).strftime("%Y-%m-%dT%H")
    key = f"{name}{HOUR_SEPARATOR}{hour}"
    previous = reading(key)
    deepest = max(depth, int((previous.value or {}).get("depth", 0)) if previous else 0)
    OpsReading.objects.update_or_create(name=key, defaults={"value": {"depth": deepest}, "at": now})
    cutoff = (now - timedelta(days=READING_HISTORY_DAYS)).astimezone(UTC)
    OpsReading.objects.filter(
        name__startswith=f"{name}{HOUR_SEPARATOR}",
        name__lt=f"{name}{HOUR_SEPARATOR}{cutoff.strftime('%Y-%m-%dT%H')}",
    ).delete()


def dead_letter_depth_check(*, queue: SqsQueue) -> dict[str, Any]:
    """Read the dead-letter queue's depth; log an error when it holds anything and the depth
    changed since the last reading (once per change), an info line when it emptied. ``queue`` is
    the request queue, whose dead-letter queue is read."""
    _, queue = dead_letter_queues(queue=queue)
    depth = queue.depth()
    value = {
        "depth": depth.total,
        "visible": depth.visible,
        "in_flight": depth.in_flight,
        "queue": queue.url,
    }
    previous = reading(DLQ_DEPTH)
    before = int((previous.value or {}).get("depth", 0)) if previous else 0
    _store(DLQ_DEPTH, value)
    _store_hourly(DLQ_DEPTH, depth.total, now=timezone.now())
    # Once per change, not every run: a dead letter nobody has redriven yet is one report.
    if depth.total and depth.total != before:
        log.error(
            "dlq.not_empty",
            depth=depth.total,
            queue=queue.url,
            previous=before,
            fix="look at the console's dead-letter page (or `manage.py dlq list`) and redrive",
        )
    elif before and not depth.total:
        log.info("dlq.empty", previous=before, queue=queue.url)
    return value


def stuck_claims_check(*, adapters: Container, now: int | None = None) -> dict[str, Any]:
    """QUEUED rows past their lease, found by a bounded Scan (``OPS_SCAN_MAX_ITEMS`` items a run)
    that resumes where the previous run stopped, so a large table is covered over several runs."""
    now = int(time.time()) if now is None else now
    previous = reading(STUCK_CLAIMS)
    start_key = (previous.value or {}).get("next_key") if previous else None
    # The pages', the API's and the consumer's policy: a row the check reports stuck reads stuck
    # there too, and the consumer takes it over now.
    lease = adapters.lease_policy
    page = adapters.journal_scan.stuck_claims(
        now=now,
        lease=lease,
        start_key=start_key,
        max_read=adapters.config.ops.scan_max_items,
    )
    rows = [
        {
            "key": row.key,
            "messageId": row.message_id,
            "recipient": row.recipient,
            "timestamp": row.timestamp,
            "leaseEndedAt": lease.ends_at(row),
        }
        for row in page.rows
    ]
    value = {
        "count": len(rows),
        "rows": rows[:50],
        "read": page.read,
        "resumed": start_key is not None,
        "next_key": page.next_key,  # None: this run reached the end of the table
    }
    _store(STUCK_CLAIMS, value)
    for row in rows[:_LOGGED_ROWS]:
        log.error(
            "journal.stuck_claim",
            key=row["key"],
            messageId=row["messageId"],
            recipient=row["recipient"],
            leaseEndedAt=row["leaseEndedAt"],
        )
    log.info(
        "journal.stuck_claims_scanned", count=len(rows), read=page.read, complete=not page.next_key
    )
    return value
