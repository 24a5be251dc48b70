"""Endpoints: add (the secret shown once), rotate (with an overlap), enable/disable, remove; and
the secrets that sign now. Each write is logged (``webhook.endpoint_*``) with who made it: the
console passes its user; a caller without one is logged with an empty user."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from emailops.core.errors import InvalidRequest
from emailops.core.events import EventLog
from emailops.core.webhook_delivery import WebhookFilter, new_secret
from emailops.core.webhooks import EVENT_TYPES
from webhooks.destination import destination_check
from webhooks.models import WebhookEndpoint
from webhooks.secrets import resealed, seal, unseal

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = [
    "endpoint_add",
    "endpoint_filter",
    "endpoint_remove",
    "endpoint_reseal_all",
    "endpoint_rotate",
    "endpoint_set_enabled",
    "signing_secrets",
]

logger = logging.getLogger("webhooks")


def _audit(event: str, user: AbstractBaseUser | None, endpoint_id: int, **fields) -> None:
    EventLog(logger).info(
        event, user=user.get_username() if user is not None else "", endpoint=endpoint_id, **fields
    )


def endpoint_add(
    *,
    adapters: Container,
    url: str,
    event_types: Iterable[str] = (),
    message_ids: Iterable[str] = (),
    organization: str = "",
    producer: str | None = None,
    include_context_keys: bool = False,
    description: str = "",
    user: AbstractBaseUser | None = None,
) -> tuple[WebhookEndpoint, str]:
    """The new endpoint and its secret (shown once: the endpoint keeps it sealed). WebhookRefused
    for a URL we will not post to; InvalidRequest for an unknown event type."""
    types = sorted(set(event_types))
    unknown = [t for t in types if t not in EVENT_TYPES]
    if unknown:
        raise InvalidRequest("add webhook", reason=f"unknown event types: {', '.join(unknown)}")
    destination_check(url, allow_loopback=adapters.config.webhooks.allow_loopback)
    secret = new_secret()
    endpoint = WebhookEndpoint.objects.create(
        url=url,
        secret=seal(secret, keys=adapters.config.webhooks.secret_keys),
        event_types=types,
        message_ids=sorted(set(message_ids)),
        organization=organization,
        producer=producer,
        include_context_keys=include_context_keys,
        description=description,
    )
    _audit(
        "webhook.endpoint_added",
        user,
        endpoint.pk,
        url=url,
        eventTypes=types,
        messageIds=endpoint.message_ids,
        organization=organization,
        producer=producer,
        includeContextKeys=include_context_keys,
    )
    return endpoint, secret


def endpoint_rotate(
    *,
    adapters: Container,
    endpoint_id: int,
    now: datetime,
    user: AbstractBaseUser | None = None,
) -> str:
    """A new secret (shown once); the old one keeps signing beside it for
    WEBHOOK_ROTATION_OVERLAP_HOURS. Both stay sealed."""
    settings = adapters.config.webhooks
    secret = new_secret()
    with transaction.atomic():
        endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint_id)
        endpoint.previous_secret = endpoint.secret
        endpoint.previous_secret_until = now + timedelta(hours=settings.rotation_overlap_hours)
        endpoint.secret = seal(secret, keys=settings.secret_keys)
        endpoint.save(update_fields=["secret", "previous_secret", "previous_secret_until"])
    _audit(
        "webhook.endpoint_rotated",
        user,
        endpoint_id,
        previousSecretUntil=endpoint.previous_secret_until.isoformat(),
    )
    return secret


def endpoint_reseal_all(*, adapters: Container) -> int:
    """Every endpoint's secrets sealed again under the first of WEBHOOK_SECRET_KEYS (after a new
    key was put first, before the old one is dropped). Returns how many endpoints were changed.
    SecretUnreadable when a secret no configured key opens."""
    keys = adapters.config.webhooks.secret_keys
    changed = 0
    with transaction.atomic():
        for endpoint in WebhookEndpoint.objects.select_for_update():
            fields = {"secret": resealed(endpoint.secret, keys=keys)}
            if endpoint.previous_secret:
                fields["previous_secret"] = resealed(endpoint.previous_secret, keys=keys)
            WebhookEndpoint.objects.filter(pk=endpoint.pk).update(**fields)
            changed += 1
    EventLog(logger).info("webhook.secrets_resealed", endpoints=changed)
    return changed


def endpoint_set_enabled(
    *,
    endpoint_id: int,
    enabled: bool,
    reason: str = "",
    user: AbstractBaseUser | None = None,
) -> None:
    """Enabling also clears the failing mark (an operator looked at it)."""
    changes = {"enabled": enabled, "disabled_reason": "" if enabled else reason}
    if enabled:
        changes |= {"failing": False, "consecutive_failures": 0}
    if WebhookEndpoint.objects.filter(pk=endpoint_id).update(**changes):
        event = "webhook.endpoint_enabled" if enabled else "webhook.endpoint_disabled"
        _audit(event, user, endpoint_id, reason=reason or None)


def endpoint_remove(*, endpoint_id: int, user: AbstractBaseUser | None = None) -> bool:
    url = WebhookEndpoint.objects.filter(pk=endpoint_id).values_list("url", flat=True).first()
    removed = WebhookEndpoint.objects.filter(pk=endpoint_id).delete()[0] > 0
    if removed:
        _audit("webhook.endpoint_removed", user, endpoint_id, url=url)
    return removed


def signing_secrets(endpoint: WebhookEndpoint, now: datetime, *, keys: Sequence[str]) -> list[str]:
    """The secrets that sign now, opened with ``keys`` (WebhooksConfig.secret_keys): the current
    one, and the previous one during a rotation's overlap. SecretUnreadable when no key opens
    one."""
    secrets = [unseal(endpoint.secret, keys=keys)]
    until = endpoint.previous_secret_until
    if endpoint.previous_secret and until is not None and now < until:
        secrets.append(unseal(endpoint.previous_secret, keys=keys))
    return secrets


def endpoint_filter(endpoint: WebhookEndpoint) -> WebhookFilter:
    return WebhookFilter(
        event_types=frozenset(endpoint.event_types),
        message_ids=frozenset(endpoint.message_ids),
        organization=endpoint.organization,
        producer=endpoint.producer,
    )
