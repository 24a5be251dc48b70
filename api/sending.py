"""One EmailRequest through the consumer's own pipeline, inline, and what became of each recipient.

The pipeline is built by ``emailops.container``'s ``build_pipeline``, exactly as the consumer builds
it, so the API claims, dedupes, journals, rate-limits and suppresses the same way. A request repeated with the
same dedupeId (by the same token) meets its own SENT rows at the claim and sends nothing.

Each token sends in its own namespace (``ApiToken.namespace``, ``api:<id>``): its rows' keys are the
queue's keys prefixed with it, and they record it as their Producer. The same dedupeId from two tokens
is two rows and two emails, and no token is ever handed a row another wrote.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from emailops.core.contract import EmailRequest, parse_complete_request
from emailops.core.dedupe import dedupe_key
from emailops.core.errors import EmailOpsError, InvalidRequest
from emailops.core.journal_row import JournalRow
from emailops.core.pipeline import Action, RecordOutcome

if TYPE_CHECKING:
    from emailops.container import Container
    from emailops.core.ports import JournalReader

__all__ = [
    "ParsedSend",
    "RecipientResult",
    "SendResult",
    "email_send",
    "invalid_field",
    "send_request_parse",
]


def invalid_field(exc: InvalidRequest) -> str | None:
    """The wire field an InvalidRequest is about (as the parser named it), or None when it is
    about the whole body."""
    return exc.field


@dataclass(frozen=True)
class ParsedSend:
    request: EmailRequest  # in the token's namespace
    body: str

    @property
    def emails(self) -> int:
        """What the request costs against the token's limit: one per distinct recipient entry."""
        return len(self.request.recipients) + len(self.request.rejected)


@dataclass(frozen=True)
class RecipientResult:
    recipient: str
    id: str  # the journal row's Id (the namespaced dedupe key)
    row: JournalRow | None  # None: no row of this producer (nothing was attempted)


@dataclass(frozen=True)
class SendResult:
    request: EmailRequest
    outcome: RecordOutcome
    results: list[RecipientResult]
    retry_after: int = 0  # for RETRY and WAIT: seconds after which asking again makes sense


def send_request_parse(*, body: str | bytes, namespace: str, max_recipients: int) -> ParsedSend:
    """Parse and check the request before anything is written or counted. Raises InvalidRequest,
    also for more recipients than ``max_recipients`` (API_MAX_RECIPIENTS: the API sends inline, a
    request must fit in one worker's timeout)."""
    request = replace(parse_complete_request(body), namespace=namespace)
    if isinstance(body, bytes):  # JSON may be UTF-8, -16 or -32; parse_request accepted it
        body = body.decode(json.detect_encoding(body))
    parsed = ParsedSend(request=request, body=body)
    limit = max_recipients
    if parsed.emails > limit:
        raise InvalidRequest(
            "parse request",
            key=request.message_id,
            reason=f"recipients has {parsed.emails} entries; the API takes at most {limit} a "
            f"request (API_MAX_RECIPIENTS={limit}): split it, or put it on the queue",
            field="recipients",
        )
    return parsed


def email_send(*, parsed: ParsedSend, adapters: Container, now: float | None = None) -> SendResult:
    """Process a parsed request, then read its rows back (only rows of its own producer).

    Raises EmailOpsError when the journal cannot be read afterwards (the caller should retry: the
    rows' dedupe keys make a retry safe), or, before anything is sent, LeaseUnknown.
    """
    request = parsed.request
    lease = adapters.lease_policy  # the consumer's: one lease length for every claim
    pipeline = adapters.build_pipeline(lease_seconds=lease.seconds)
    outcome = pipeline.process(
        parsed.body, record_id=f"api:{uuid.uuid4()}", namespace=request.namespace
    )
    adapters.flush_stats()  # a web worker may send nothing more for a while: count these now
    results = []
    for recipient in request.recipients:
        key = dedupe_key(request, recipient.email)
        row = _row(adapters.journal_reader, key)
        if row is not None and row.producer != request.namespace:
            row = None  # a key that collides with a row someone else wrote: never hand it back
        results.append(RecipientResult(recipient=recipient.email, id=key, row=row))
    return SendResult(
        request=request,
        outcome=outcome,
        results=results,
        retry_after=_retry_after(
            outcome,
            now=time.time() if now is None else now,
            backoff_base=adapters.config.sending.retry_backoff_base_seconds,
        ),
    )


def _row(journal_reader: JournalReader, key: str) -> JournalRow | None:
    try:
        return journal_reader.read(key)
    except EmailOpsError as exc:
        if exc.permanent:  # a key DynamoDB refuses (too long): no row can exist
            return None
        raise


def _retry_after(outcome: RecordOutcome, *, now: float, backoff_base: int) -> int:
    if outcome.action is Action.WAIT:
        return max(1, outcome.wait_until - int(now))
    if outcome.action is Action.RETRY:
        return max(1, backoff_base)
    return 0
