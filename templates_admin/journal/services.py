"""Writes about the journal: resending an email, and the audit trail of every read of it (the
console's pages, ``email_log`` and the API all record their reads here)."""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from emailops.core.contract import (
    EmailRequest,
    Recipient,
    parse_complete_request,
    request_to_json,
)
from emailops.core.dedupe import dedupe_key
from emailops.core.erasure import ERASED_PREFIX
from emailops.core.errors import InvalidRequest
from emailops.core.events import EventLog
from templates_admin import roles
from templates_admin.models import EmailAction

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = [
    "email_resend",
    "new_resend_dedupe_id",
]

logger = logging.getLogger("templates_admin.journal")


def new_resend_dedupe_id() -> str:
    return f"resend-{uuid.uuid4().hex}"


def email_resend(
    *,
    adapters: Container,
    key: str,
    reason: str,
    user: AbstractBaseUser,
    dedupe_id: str | None = None,
) -> EmailAction:
    """Put the row's messageId and context back on the queue for the same recipient.

    The new request carries a fresh ``dedupe_id``, so it gets its own journal row (``journal_key``)
    instead of being skipped as a duplicate of the old one. The confirmation form generates the
    dedupe id once, so submitting it twice resends once: the second call returns the first action.
    Raises PermissionDenied, ValidationError (no reason, no row, a request that would not parse) or
    EmailOpsError (the queue refused it; nothing is recorded then).
    """
    if not user.has_perm(roles.RESEND_EMAIL):
        raise PermissionDenied("resending needs the resend_email permission")
    reason = reason.strip()
    if not reason:
        raise ValidationError("say why you are resending: the reason is kept in the audit trail")
    dedupe_id = dedupe_id or new_resend_dedupe_id()
    done = EmailAction.objects.filter(kind=EmailAction.Kind.RESEND, dedupe_id=dedupe_id).first()
    if done is not None:
        return done

    row = adapters.journal_reader.read(key)
    if row is None:
        raise ValidationError(f"there is no journal row {key!r} to resend")
    if row.context_trimmed:
        raise ValidationError(
            f"this row cannot be resent: its context ({row.context_trimmed} bytes) was trimmed "
            "to fit the journal; send the original request again instead"
        )
    recipient = row.recipient
    tombstones = adapters.tombstones
    if recipient.startswith(ERASED_PREFIX) or tombstones.erased_at(recipient) is not None:
        raise ValidationError(
            "this row's recipient was erased: the journal keeps nothing to resend to them (a new "
            "request from its producer is still sent)"
        )
    request = EmailRequest(
        message_id=row.message_id,
        recipients=(Recipient(email=recipient),),
        context=dict(row.context),
        dedupe_id=dedupe_id,
    )
    body = request_to_json(request)
    try:
        # What the consumer would dead-letter, or send differently (a fallback template): say so.
        parse_complete_request(body)
    except InvalidRequest as exc:
        raise ValidationError(f"this row cannot be resent: {exc.describe()}") from exc

    with transaction.atomic():  # no audit row for a resend the queue refused
        action = EmailAction.objects.create(
            kind=EmailAction.Kind.RESEND,
            user=user,
            message_id=request.message_id,
            recipient=recipient,
            reason=reason,
            dedupe_id=dedupe_id,
            journal_key=dedupe_key(request, recipient),
            original_key=key,
        )
        action.sqs_message_id = adapters.queue.send(body)
        action.save(update_fields=["sqs_message_id"])
    EventLog(logger).info(
        "email.resent",
        user=user.get_username(),
        messageId=action.message_id,
        originalKey=key,
        key=action.journal_key,
        sqsMessageId=action.sqs_message_id,
    )
    return action
