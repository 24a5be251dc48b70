"""The webhook outbox's wake-up on the Celery broker (Redis): ``emit`` sends one task by name
(``worker.webhook_fan_out``, the event as its argument) once the journal write has stored the
event in the durable outbox beside its fact (``emailops.aws.webhook_outbox``). One Redis LPUSH of a
few hundred bytes per event, on the broker connection the process keeps; never a journal read,
never an HTTP call in the consumer. A lost wake-up (Redis down) loses nothing: the outbox's sweep
fans the event out (docs/webhooks.md has the choice and its cost)."""

from __future__ import annotations

import logging

from emailops.core.events import EventLog
from emailops.core.webhooks import WebhookEvent

__all__ = ["FAN_OUT_TASK", "CeleryOutbox"]

FAN_OUT_TASK = "worker.webhook_fan_out"

logger = logging.getLogger("emailops.webhooks")


class CeleryOutbox:
    def __init__(self, *, queue: str) -> None:
        self.queue = queue

    def emit(self, event: WebhookEvent) -> None:
        from emailops.celery import app

        try:
            # retry=False: a broker outage costs the wake-up (logged; the sweep delivers the
            # event), never a held send.
            app.send_task(FAN_OUT_TASK, args=[event.to_dict()], queue=self.queue, retry=False)
        except Exception as exc:
            EventLog(logger, key=event.journal_key).warning(
                "webhook.not_emitted", eventId=event.id, eventType=event.type, error=repr(exc)
            )
