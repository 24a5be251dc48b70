"""Writes from the suppression pages: taking an address off the list, audited."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from emailops.core.contract import address_key
from emailops.core.events import EventLog
from emailops.core.preferences import HowChanged, Preference
from templates_admin import roles
from templates_admin.categories import category_label
from templates_admin.models import PreferenceResubscribe, SuppressionRemoval

if TYPE_CHECKING:
    from emailops.aws.suppression import DynamoSuppressionList
    from emailops.core.preferences import PreferenceStore

__all__ = ["preference_resubscribe", "suppression_remove"]

logger = logging.getLogger("templates_admin.suppression")


def suppression_remove(
    *,
    suppression_list: DynamoSuppressionList,
    address: str,
    reason: str,
    user: AbstractBaseUser,
    recipient_asked: bool = False,
) -> SuppressionRemoval:
    """Remove ``address`` from the suppression list, so the consumer sends to it again.

    A complaint means the person told their mail provider our email was spam: lifting it needs
    ``recipient_asked`` (they asked to receive email again). The audit row keeps the entry as it
    was. Raises PermissionDenied, ValidationError (no reason, not suppressed, an unconfirmed
    complaint) or EmailOpsError (the table could not be changed; nothing is recorded then).
    """
    if not user.has_perm(roles.REMOVE_SUPPRESSION):
        raise PermissionDenied("removing a suppression needs the remove_suppression permission")
    reason = reason.strip()
    if not reason:
        raise ValidationError("say why you are removing it: the reason is kept in the audit trail")
    address = address.strip()  # as given: a Go-written row may be in any case
    store = suppression_list
    current = store.get(address)
    if current is None:
        raise ValidationError(f"{address} is not on the suppression list")
    if current.reason == "complaint" and not recipient_asked:
        raise ValidationError(
            f"{address} complained (marked our email as spam): confirm that they asked to "
            "receive email again"
        )
    with transaction.atomic():  # no audit row for a removal the table refused
        removal = SuppressionRemoval.objects.create(
            address=address_key(address),  # the trail is kept per mailbox, whatever the spelling
            user=user,
            reason=reason,
            suppression_reason=current.reason,
            suppression_detail=current.detail,
            suppression_source=current.source,
            suppressed_at=datetime.fromtimestamp(current.created_at, UTC),
            recipient_asked=recipient_asked,
        )
        if store.remove(address) is None:
            raise ValidationError(f"{address} was removed meanwhile, by someone else")
    EventLog(logger).info(
        "suppression.removed",
        user=user.get_username(),
        address=address,
        suppressionReason=current.reason,
        recipientAsked=recipient_asked,
    )
    return removal


def preference_resubscribe(
    *,
    preference_store: PreferenceStore | None,
    address: str,
    category: str,
    reason: str,
    user: AbstractBaseUser,
    recipient_asked: bool,
) -> PreferenceResubscribe:
    """Subscribe ``address`` to ``category`` again (Preference subscribed, how ``support``), so
    its categorised mail is sent again. Like lifting a complaint, only at the recipient's own
    request: ``recipient_asked`` must be ticked. Audited (a row, and a log line with the user).
    Raises PermissionDenied, ValidationError (no reason, not asked, not unsubscribed, no store)
    or EmailOpsError (the store could not be written; nothing is recorded then)."""
    if not user.has_perm(roles.REMOVE_SUPPRESSION):
        raise PermissionDenied("re-subscribing needs the remove_suppression permission")
    reason = reason.strip()
    if not reason:
        raise ValidationError("say why you are re-subscribing it: the reason is kept")
    if not recipient_asked:
        raise ValidationError(
            "only the recipient may ask to be subscribed again: confirm that they asked"
        )
    store = preference_store
    if store is None:
        raise ValidationError("this deployment keeps no recipient preferences")
    address = address.strip()
    current = store.get(address, category)
    if current is None or current.subscribed:
        raise ValidationError(f"{address} is not unsubscribed from {category_label(category)}")
    now = int(time.time())
    with transaction.atomic():  # no audit row for a write the store refused
        change = PreferenceResubscribe.objects.create(
            address=address_key(address),
            category=category,
            user=user,
            reason=reason,
            unsubscribed_how=current.how,
            unsubscribed_at=datetime.fromtimestamp(current.at, UTC) if current.at else None,
            recipient_asked=True,
        )
        store.set(
            Preference(
                address=address_key(address),
                category=category,
                subscribed=True,
                how=HowChanged.SUPPORT.value,
                at=now,
                label=category_label(category),
            )
        )
    EventLog(logger).info(
        "preference.resubscribed",
        user=user.get_username(),
        address=address,
        category=category,
        unsubscribedHow=current.how,
        recipientAsked=True,
    )
    return change
