"""Endpoints: add (the secret shown once), rotate (with an overlap), enable/disable, remove; and
the secrets that sign now."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import transaction

from emailops import container
from emailops.core.errors import InvalidRequest
from emailops.core.webhooks import EVENT_TYPES, WebhookFilter, new_secret
from templates_admin.models import WebhookEndpoint
from templates_admin.webhooks.destination import destination_check

__all__ = [
    "endpoint_add",
    "endpoint_filter",
    "endpoint_remove",
    "endpoint_rotate",
    "endpoint_set_enabled",
    "signing_secrets",
]


def endpoint_add(
    *,
    url: str,
    event_types: Iterable[str] = (),
    message_ids: Iterable[str] = (),
    organization: str = "",
    producer: str | None = None,
    include_context_keys: bool = False,
    description: str = "",
) -> tuple[WebhookEndpoint, str]:
    """The new endpoint and its secret (shown once). WebhookRefused for a URL we will not post
    to; InvalidRequest for an unknown event type."""
    types = sorted(set(event_types))
    unknown = [t for t in types if t not in EVENT_TYPES]
    if unknown:
        raise InvalidRequest("add webhook", reason=f"unknown event types: {', '.join(unknown)}")
    destination_check(url)
    secret = new_secret()
    endpoint = WebhookEndpoint.objects.create(
        url=url,
        secret=secret,
        event_types=types,
        message_ids=sorted(set(message_ids)),
        organization=organization,
        producer=producer,
        include_context_keys=include_context_keys,
        description=description,
    )
    return endpoint, secret


def endpoint_rotate(*, endpoint_id: int, now: datetime) -> str:
    """A new secret; the old one keeps signing beside it for WEBHOOK_ROTATION_OVERLAP_HOURS."""
    hours = container.current().config.webhooks.rotation_overlap_hours
    with transaction.atomic():
        endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint_id)
        endpoint.previous_secret = endpoint.secret
        endpoint.previous_secret_until = now + timedelta(hours=hours)
        endpoint.secret = new_secret()
        endpoint.save(update_fields=["secret", "previous_secret", "previous_secret_until"])
    return endpoint.secret


def endpoint_set_enabled(*, endpoint_id: int, enabled: bool, reason: str = "") -> None:
    """Enabling also clears the failing mark (an operator looked at it)."""
    changes = {"enabled": enabled, "disabled_reason": "" if enabled else reason}
    if enabled:
        changes |= {"failing": False, "consecutive_failures": 0}
    WebhookEndpoint.objects.filter(pk=endpoint_id).update(**changes)


def endpoint_remove(*, endpoint_id: int) -> bool:
    return WebhookEndpoint.objects.filter(pk=endpoint_id).delete()[0] > 0


def signing_secrets(endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    secrets = [endpoint.secret]
    until = endpoint.previous_secret_until
    if endpoint.previous_secret and until is not None and now < until:
        secrets.append(endpoint.previous_secret)
    return secrets


def endpoint_filter(endpoint: WebhookEndpoint) -> WebhookFilter:
    return WebhookFilter(
        event_types=frozenset(endpoint.event_types),
        message_ids=frozenset(endpoint.message_ids),
        organization=endpoint.organization,
        producer=endpoint.producer,
    )
