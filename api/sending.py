"""One EmailRequest through the consumer's own pipeline, inline, and what became of each recipient.

The pipeline is built by ``emailops.wiring.build_pipeline``, exactly as the consumer builds it, so the
API claims, dedupes, journals (and, once wired there, rate-limits and suppresses) the same way. A
request repeated with the same dedupeId meets its own SENT rows at the claim and sends nothing.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from emailops import wiring
from emailops.core.contract import EmailRequest, parse_complete_request
from emailops.core.dedupe import dedupe_key
from emailops.core.errors import EmailOpsError, InvalidRequest
from emailops.core.pipeline import Action, RecordOutcome

__all__ = ["RecipientResult", "SendResult", "email_send", "invalid_field"]

# The claim's lease when CLAIM_LEASE_SECONDS is unset: the API does not read the queue's visibility
# timeout. An inline send takes seconds; the lease only matters if this process dies mid-send.
DEFAULT_LEASE_SECONDS = 60

# InvalidRequest reasons start with the field they are about ("recipients[0].email is missing").
_FIELD = re.compile(
    r"^(?P<field>messageId|dedupeId|recipients(\[\d+\])?(\.(email|name))?|context(\.organizationId)?)(?=\s|$)"
)


def invalid_field(exc: InvalidRequest) -> str | None:
    """The wire field an InvalidRequest is about, or None when it is about the whole body."""
    if exc.reason == "no recipients":
        return "recipients"
    match = _FIELD.match(exc.reason.removeprefix("no valid recipient: "))
    return match["field"] if match else None


@dataclass(frozen=True)
class RecipientResult:
    recipient: str
    id: str  # the journal row's Id (the dedupe key)
    row: dict[str, Any] | None  # None: no row (nothing was attempted for this recipient)


@dataclass(frozen=True)
class SendResult:
    request: EmailRequest
    outcome: RecordOutcome
    results: list[RecipientResult]
    retry_after: int = 0  # for RETRY and WAIT: seconds after which asking again makes sense


def email_send(*, body: str | bytes, now: float | None = None) -> SendResult:
    """Parse (raising InvalidRequest, before anything is written), process, read the rows back.

    Raises EmailOpsError when the journal cannot be read afterwards (the caller should retry: the
    rows' dedupe keys make a retry safe).
    """
    request = parse_complete_request(body)  # synchronous: the caller can fix and retry
    lease = settings.CLAIM_LEASE_SECONDS or DEFAULT_LEASE_SECONDS
    pipeline = wiring.build_pipeline(lease_seconds=lease)
    if isinstance(body, bytes):  # JSON may be UTF-8, -16 or -32; parse_request accepted it
        body = body.decode(json.detect_encoding(body))
    outcome = pipeline.process(body, record_id=f"api:{uuid.uuid4()}")
    results = []
    for recipient in request.recipients:
        key = dedupe_key(request, recipient.email)
        results.append(RecipientResult(recipient=recipient.email, id=key, row=_row(key)))
    return SendResult(
        request=request,
        outcome=outcome,
        results=results,
        retry_after=_retry_after(outcome, now=time.time() if now is None else now),
    )


def _row(key: str) -> dict[str, Any] | None:
    try:
        return wiring.journal().get(key)
    except EmailOpsError as exc:
        if exc.permanent:  # a key DynamoDB refuses (too long): no row can exist
            return None
        raise


def _retry_after(outcome: RecordOutcome, *, now: float) -> int:
    if outcome.action is Action.WAIT:
        return max(1, outcome.wait_until - int(now))
    if outcome.action is Action.RETRY:
        return max(1, settings.RETRY_BACKOFF_BASE_SECONDS)
    return 0
