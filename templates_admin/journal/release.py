"""Releasing log-only requests: a Support lead sends, after all, what the rate safeguard or the
loop detector journaled log-only (the producer was fixed, the burst was legitimate).

A release is audited (an ``EmailAction`` of kind RELEASE: who, when, why), makes the row claimable
again by a conditional update (only a log-only row of those reasons: a second release, or a row
sent meanwhile, is refused), and puts the original request back on the queue **with the same
dedupe key**, through the normal pipeline. Its ``EmailOpsState`` names the key as released, so the
send guard lets that one send through; the suppression list and the service stop still apply. The
state is sealed under the server's secret (emailops.queue_state): a producer cannot write one.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from emailops.core.contract import EmailRequest, Recipient, request_to_json
from emailops.core.dedupe import dedupe_key
from emailops.core.events import EventLog
from emailops.core.log_only import LogOnlyReason
from emailops.core.retry import STATE_ATTRIBUTE, RetryState
from emailops.queue_state import state_seal
from templates_admin import roles
from templates_admin.models import EmailAction

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = ["RELEASABLE", "logged_only_release"]

logger = logging.getLogger("templates_admin.journal")

# Reasons a release may override: the guard's. A stopped service, a template switched off or a
# suppressed address are lifted where they are set, not row by row.
RELEASABLE = (LogOnlyReason.RATE_SAFEGUARD.value, LogOnlyReason.LOOP.value)


def _original_request(key: str, message_id: str, recipient: str, context: dict) -> EmailRequest:
    """The request whose dedupe key is ``key``: Go's hash of (messageId, recipient, context), or
    ``<dedupeId>:<recipient>``. Refused when no request rebuilt from the row has that key."""
    suffix = f":{recipient}"
    dedupe_id = key[: -len(suffix)] if key.endswith(suffix) else None
    request = EmailRequest(
        message_id=message_id,
        recipients=(Recipient(email=recipient),),
        context=dict(context),
        dedupe_id=dedupe_id,
    )
    if dedupe_key(request, recipient) != key:
        raise ValidationError(
            "this row cannot be released with its own dedupe key (its request cannot be rebuilt "
            "from the journal); send the original request again instead"
        )
    return request


def logged_only_release(
    *, adapters: Container, key: str, reason: str, user: AbstractBaseUser
) -> EmailAction:
    """Release one log-only row (reason rate safeguard or loop) to be sent. Raises
    PermissionDenied, ValidationError (no reason, no such row, not releasable) or EmailOpsError
    (the journal or the queue refused; no audit row is kept then)."""
    if not user.has_perm(roles.RESEND_EMAIL):
        raise PermissionDenied("releasing needs the resend_email permission")
    reason = reason.strip()
    if not reason:
        raise ValidationError("say why you are releasing it: the reason is kept in the audit trail")
    row = adapters.journal_reader.read(key)
    if row is None:
        raise ValidationError(f"there is no journal row {key!r}")
    if not row.logged_only or row.logged_only_reason not in RELEASABLE:
        raise ValidationError("only a row made log-only by the rate safeguard or the loop detector")
    if row.context_trimmed or row.producer:
        raise ValidationError("this row cannot be released: send the original request again")
    request = _original_request(key, row.message_id, row.recipient, dict(row.context))
    who = user.get_username()
    with transaction.atomic():  # no audit row for a release the journal or the queue refused
        action = EmailAction.objects.create(
            kind=EmailAction.Kind.RELEASE,
            user=user,
            message_id=row.message_id,
            recipient=row.recipient,
            reason=reason,
            dedupe_id=f"release-{uuid.uuid4().hex}",
            journal_key=key,
            original_key=key,
        )
        if not adapters.journal.release_logged_only(key, reasons=RELEASABLE, by=who, why=reason):
            raise ValidationError("this row was released or changed meanwhile: look again")
        body = request_to_json(request)
        state = state_seal().seal(RetryState(released=(key,)), body)
        action.sqs_message_id = adapters.queue.send(body, attributes={STATE_ATTRIBUTE: state})
        action.save(update_fields=["sqs_message_id"])
    EventLog(logger).info(
        "email.released",
        user=who,
        messageId=row.message_id,
        key=key,
        loggedOnlyReason=row.logged_only_reason,
        sqsMessageId=action.sqs_message_id,
    )
    return action
