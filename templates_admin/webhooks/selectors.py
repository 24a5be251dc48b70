"""Reads for the webhooks pages: endpoints with their last delivery, an endpoint's delivery log,
one delivery with its attempts and its payload masked, and a journal row's deliveries (the
journal's row page shows them: the journal may use this area, this area uses none)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db.models import OuterRef, QuerySet, Subquery

from emailops.core.errors import EmailOpsError
from emailops.core.masking import RowMask
from templates_admin.display import mask_context
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint

if TYPE_CHECKING:
    from emailops.core.ports import JournalReader

__all__ = [
    "DeliveryDetail",
    "delivery_detail",
    "endpoint_deliveries",
    "endpoint_list",
    "failed_in_range",
    "masked_payload",
    "row_deliveries",
]

DELIVERY_PAGE = 100
# Fields of the payload this service writes that hold no value of the row's context (a row key,
# the context's key names), left as they are although their names contain a sensitive word.
_NOT_SECRET = ("journalKey", "contextKeys")


def endpoint_list() -> QuerySet[WebhookEndpoint]:
    """Every endpoint, with ``last_delivery_at`` (when its newest delivery was made)."""
    newest = WebhookDelivery.objects.filter(endpoint=OuterRef("pk")).order_by("-created_at", "-id")
    return WebhookEndpoint.objects.annotate(
        last_delivery_at=Subquery(newest.values("created_at")[:1]),
        last_delivery_state=Subquery(newest.values("state")[:1]),
        last_delivery_status=Subquery(newest.values("last_status")[:1]),
    )


def endpoint_deliveries(
    endpoint: WebhookEndpoint, *, state: str = "", limit: int = DELIVERY_PAGE
) -> list[WebhookDelivery]:
    """The endpoint's newest deliveries (of one state, when given)."""
    deliveries = WebhookDelivery.objects.filter(endpoint=endpoint)
    if state:
        deliveries = deliveries.filter(state=state)
    return list(deliveries.defer("body", "event")[:limit])


def failed_in_range(endpoint_id: int, *, since: datetime, until: datetime) -> QuerySet:
    """The endpoint's FAILED deliveries made in [since, until], oldest first."""
    return WebhookDelivery.objects.filter(
        endpoint_id=endpoint_id,
        state=WebhookDelivery.State.FAILED,
        created_at__gte=since,
        created_at__lte=until,
    ).order_by("created_at", "id")


def masked_payload(body: str, sensitive: Iterable[str], context: Any = None) -> Any:
    """The payload as the console shows it: the value of every sensitive key masked, and, when
    the row's ``context`` is known, every copy of its sensitive values wherever the payload
    carries one (an error or a bounce diagnostic quoting a token, a clicked link)."""
    try:
        data = json.loads(body)
    except ValueError:
        data = body
    words = tuple(sensitive)
    kept: dict[str, Any] = {}
    if isinstance(data, dict) and isinstance(data.get("data"), dict):
        kept = {k: data["data"][k] for k in _NOT_SECRET if k in data["data"]}
    masked = mask_context(data, words)
    if kept:
        masked["data"].update(kept)
    if context:
        masked = RowMask(context, words).value(masked)
    return masked


@dataclass(frozen=True)
class DeliveryDetail:
    delivery: WebhookDelivery
    attempts: list[WebhookAttempt]
    payload: str  # masked, indented JSON
    # The row's context was read and its values masked wherever they appear; False: the row is
    # gone (or could not be read), and only the values under sensitive keys are masked.
    masked_by_value: bool


def delivery_detail(
    delivery: WebhookDelivery, *, journal_reader: JournalReader, sensitive: Iterable[str]
) -> DeliveryDetail:
    context, by_value = None, False
    try:
        row = journal_reader.read(delivery.journal_key)
    except EmailOpsError:
        row = None
    if row is not None:
        context, by_value = row.context, True
    payload = masked_payload(delivery.body, sensitive, context)
    return DeliveryDetail(
        delivery=delivery,
        attempts=list(delivery.log.all()),
        payload=json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=True),
        masked_by_value=by_value,
    )


def row_deliveries(journal_key: str) -> list[WebhookDelivery]:
    """The webhook deliveries of one journal row, newest first, with their endpoints."""
    return list(
        WebhookDelivery.objects.filter(journal_key=journal_key)
        .select_related("endpoint")
        .defer("body", "event")
    )
