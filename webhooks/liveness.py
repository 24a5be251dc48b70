"""Would a new endpoint's events be delivered? Only with the outbox on (WEBHOOK_OUTBOX) and a
worker reading the webhook queue (WEBHOOK_QUEUE) seen lately.

A worker on that queue records that it was seen, in an ``OpsReading`` named after the queue: when
it starts (``worker_ready``), when it runs the heartbeat beat sends to that queue every minute
(only a worker reading the queue can run it, so this is proof the queue is read, not just that
some worker is up), and at most once a minute while it fans events out (a long queue holds the
heartbeat behind them). ``webhooks add`` and the console's add page read it: one line when nothing
would deliver.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from monitoring.models import OpsReading

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = ["SEEN_WITHIN", "delivery_gap", "worker_seen"]

# Five of beat's heartbeats (emailops.celery.WEBHOOK_HEARTBEAT_SECONDS): its jitter fits in it.
SEEN_WITHIN = timedelta(minutes=5)
_THROTTLE = timedelta(minutes=1)  # a throttled caller records at most this often
_PREFIX = "webhook_worker:"
_NAME_LENGTH = OpsReading._meta.get_field("name").max_length
# queue → when this process last recorded it (throttled callers only)
_recorded: dict[str, datetime] = {}


def _reading_name(queue: str) -> str:
    name = f"{_PREFIX}{queue}"
    if len(name) <= _NAME_LENGTH:
        return name
    return f"{_PREFIX}{hashlib.sha256(queue.encode()).hexdigest()[:32]}"  # a long queue name


def worker_seen(*, queue: str, now: datetime, throttle: bool = False) -> None:
    """Record that a worker reading ``queue`` is alive at ``now``. With ``throttle``, at most once
    a minute in this process (for a caller on every event)."""
    if throttle:
        last = _recorded.get(queue)
        if last is not None and now - last < _THROTTLE:
            return
    _recorded[queue] = now
    OpsReading.objects.update_or_create(
        name=_reading_name(queue), defaults={"value": {"queue": queue}, "at": now}
    )


def delivery_gap(*, adapters: Container, now: datetime) -> str:
    """One line saying why nothing would deliver an endpoint's events; "" when something would."""
    webhooks = adapters.config.webhooks
    if not webhooks.emitted:
        return (
            "nothing will be delivered: WEBHOOK_OUTBOX=off emits no webhook events "
            "(endpoints get only test events)"
        )
    seen = (
        OpsReading.objects.filter(name=_reading_name(webhooks.queue))
        .values_list("at", flat=True)
        .first()
    )
    if seen is None or seen < now - SEEN_WITHIN:
        minutes = int(SEEN_WITHIN.total_seconds() // 60)
        return (
            f"nothing delivers yet: no webhook worker seen on queue {webhooks.queue} in the last "
            f"{minutes} minutes (run `celery -A emailops worker -Q {webhooks.queue}`, and beat)"
        )
    return ""
