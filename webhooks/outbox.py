"""The durable outbox's reading side (docs/webhooks.md, "The outbox"): an event the journal wrote
beside its fact is fanned out (a delivery per matching endpoint), then its outbox item deleted;
the sweep fans out what no wake-up took. Both are idempotent (a delivery is unique per endpoint
and event id), so a wake-up and the sweep racing on one event make one delivery per endpoint."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from emailops.core.events import EventLog
from emailops.core.webhooks import WebhookEvent, WebhookOutboxStore
from webhooks.delivery import fan_out

if TYPE_CHECKING:
    from emailops.core.ports import JournalReader

__all__ = ["STALE_SECONDS", "SWEEP_GRACE_SECONDS", "outbox_fan_out", "outbox_sweep"]

logger = logging.getLogger("webhooks")
# An item younger than this may still have its wake-up on the way: the sweep leaves it.
SWEEP_GRACE_SECONDS = 5.0
# An item this old means webhook workers were away (or failing) that long: said loudly.
STALE_SECONDS = 3600.0
SWEEP_LIMIT = 500  # items one sweep fans out; the next sweep takes the rest


def outbox_fan_out(
    event_data: Mapping[str, Any],
    *,
    journal_reader: JournalReader,
    store: WebhookOutboxStore | None,
    schedule: Callable[[list[int]], None] = lambda ids: None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[int]:
    """Fan the event out, ``schedule`` the new deliveries' attempts, then delete its outbox item
    (``store``; None: no durable outbox). A fan-out or a scheduling that raises (Redis down)
    leaves the item, for the sweep (which schedules a delivery left unscheduled)."""
    ids = fan_out(event_data, journal_reader=journal_reader, sleep=sleep)
    schedule(ids)
    if store is not None:
        store.delete(WebhookEvent.from_dict(event_data).id)
    return ids


def outbox_sweep(
    *,
    journal_reader: JournalReader,
    store: WebhookOutboxStore,
    now: float,
    schedule: Callable[[list[int]], None] = lambda ids: None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[int]:
    """Fan out (and ``schedule``) the outbox's items older than ``SWEEP_GRACE_SECONDS`` (their wake-up was lost:
    a broker outage, a killed worker): the new deliveries' ids, to attempt."""
    pending = store.pending(created_before=now - SWEEP_GRACE_SECONDS, limit=SWEEP_LIMIT)
    if not pending:
        return []
    oldest = now - pending[0].created_at
    log = EventLog(logger)
    stale = sum(1 for item in pending if now - item.created_at > STALE_SECONDS)
    if stale:
        log.error("webhook.outbox_stale", count=stale, oldestSeconds=int(oldest))
    log.warning("webhook.outbox_swept", count=len(pending), oldestSeconds=int(oldest))
    ids: list[int] = []
    for item in pending:
        try:
            ids += outbox_fan_out(
                item.event.to_dict(),
                journal_reader=journal_reader,
                store=store,
                schedule=schedule,
                sleep=sleep,
            )
        except Exception as exc:  # left in the outbox: the next sweep tries it again
            EventLog(logger, key=item.event.journal_key).error(
                "webhook.fan_out_failed", eventId=item.event.id, error=repr(exc)[:300]
            )
    return ids
