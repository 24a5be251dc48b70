"""Erasure of one recipient, the deliveries' part: every webhook delivery of the erased journal
rows, or whose payload names the address, keeps no address. Its payload (the body every attempt
and a replay send), its event, its journal key and its attempts' errors are rewritten with the
address's erased name (``erased:<hash>``, as the journal, the jobs and the kept preferences
name it), so the delivery page, the delivery log and a replay show and send no address. The
console's erasure (``templates_admin.journal.erasure``) calls it."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.db.models import Q, QuerySet

from emailops.core.contract import address_spellings
from emailops.core.erasure import address_scrubber
from emailops.core.webhook_delivery import body_of
from webhooks.models import WebhookAttempt, WebhookDelivery

__all__ = ["deliveries_erase", "deliveries_naming"]


def deliveries_naming(address: str, *, journal_keys: Iterable[str]) -> QuerySet[WebhookDelivery]:
    """The deliveries of those journal rows (the address's), or whose key or payload names the
    address in a spelling told from it (``address_spellings``, ignoring case)."""
    match = Q(journal_key__in=list(journal_keys))
    for spelling in address_spellings(address):
        match |= Q(journal_key__icontains=spelling) | Q(body__icontains=spelling)
    return WebhookDelivery.objects.filter(match)


def _body(body: str, *, scrub, name: str, its_row: bool) -> str:
    try:
        data: Any = json.loads(body)
    except ValueError:
        return scrub(body)
    data = scrub(data)
    inner = data.get("data") if isinstance(data, dict) else None
    if its_row and isinstance(inner, dict) and inner.get("recipient"):
        inner["recipient"] = name  # the row's recipient, whatever spelling it was sent to
    return body_of(data)  # the one serialisation every attempt sends


def deliveries_erase(*, address: str, name: str, journal_keys: Iterable[str]) -> int:
    """Rewrite every delivery naming ``address`` (see ``deliveries_naming``) with ``name``.
    Returns how many were rewritten; safe to repeat (a rewritten one names no address)."""
    keys = set(journal_keys)
    scrub = address_scrubber(address, name)
    changed = 0
    with transaction.atomic():
        for delivery in deliveries_naming(address, journal_keys=keys).select_for_update():
            fields = {
                "body": _body(
                    delivery.body, scrub=scrub, name=name, its_row=delivery.journal_key in keys
                ),
                "event": scrub(delivery.event),
                "journal_key": scrub(delivery.journal_key),
            }
            if isinstance(fields["event"], dict) and delivery.journal_key in keys:
                fields["event"]["journal_key"] = fields["journal_key"]
            if any(fields[k] != getattr(delivery, k) for k in fields):
                WebhookDelivery.objects.filter(pk=delivery.pk).update(**fields)
                changed += 1
            for attempt in WebhookAttempt.objects.filter(delivery=delivery).exclude(error=""):
                if (error := scrub(attempt.error)) != attempt.error:
                    WebhookAttempt.objects.filter(pk=attempt.pk).update(error=error[:500])
    return changed
