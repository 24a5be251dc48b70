"""The request queue's dead-letter queue: look at it without consuming it, and redrive it.

Looking is a job (``dead_letter_list_run``), started on purpose: messages are received with a
short visibility, held while the listing collects more (so SQS hands out the next ones), then
released at once (visibility 0). A look adds one to each message's receive count; nothing else
changes. The job keeps what it read, contexts and bodies masked as in the journal, and the
dead-letter page shows the latest such listing: viewing the page never receives from the queue.

Redrive (a job): each message is copied to the source queue with its message attributes, except
the stale ``FailureReason`` (``EmailOpsState``, the consumer's retry history, survives), and
deleted from the dead-letter queue only after the copy was accepted. The copy is recorded as a
``JobStep`` before the delete, so a retried job deletes what it already copied instead of copying
it again. A crash between the copy and that record can leave one duplicate on the source queue;
the consumer's journal makes it harmless (recipients already SENT are skipped). A recipient
erased since (erasure's tombstone) is taken out of the copy; a message all of whose recipients
were erased is deleted, not redriven.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from emailops.aws.sqs import (
    FAILURE_REASON_ATTRIBUTE,
    QueueDepth,
    QueueMessage,
    SqsQueue,
    forwardable_attributes,
)
from emailops.core.contract import parse_request
from emailops.core.errors import EmailOpsError
from emailops.core.pacing import Pacer
from emailops.core.retry import STATE_ATTRIBUTE
from emailops.queue_state import state_seal
from jobs.models import Job, JobStep
from monitoring.queues import dead_letter_queues
from templates_admin.display import MASK, mask_context

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = [
    "DeadLetter",
    "DeadLetterListing",
    "dead_letter_list",
    "dead_letter_list_run",
    "dead_letter_listing",
    "dead_letter_queues",
    "redrive_inputs",
    "redrive_run",
]

MAX_LIST = 500
PEEK_HIDE_SECONDS = 20  # long enough to list a few hundred messages, short if we crash meanwhile


@dataclass(frozen=True)
class DeadLetter:
    message_id: str
    failure_reason: str  # "" when SQS moved it after maxReceiveCount (no reason given)
    receive_count: int
    sent_at: int
    body: str
    request: dict[str, Any] | None  # the parsed EmailRequest, context masked
    request_error: str = ""
    attribute_names: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.message_id,
            "failureReason": self.failure_reason,
            "receiveCount": self.receive_count,
            "sentAt": self.sent_at,
            "request": self.request,
            "requestError": self.request_error,
            "attributes": list(self.attribute_names),
            "body": self.body if self.request is None else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DeadLetter:
        return cls(
            message_id=data["id"],
            failure_reason=data.get("failureReason", ""),
            receive_count=data.get("receiveCount", 0),
            sent_at=data.get("sentAt", 0),
            body=data.get("body") or "",
            request=data.get("request"),
            request_error=data.get("requestError", ""),
            attribute_names=tuple(data.get("attributes", ())),
        )


@dataclass(frozen=True)
class DeadLetterListing:
    queue_url: str
    source_url: str
    depth: QueueDepth
    messages: list[DeadLetter] = field(default_factory=list)
    truncated: bool = False  # the listing stopped at its bound; more may exist


def masked_body(body: str, sensitive: Iterable[str]) -> str:
    """A body that is not a valid request, masked as the journal masks a context: JSON keeps its
    shape with sensitive values masked; anything else is not shown (it has no keys to judge)."""
    try:
        data = json.loads(body)
    except ValueError:
        return f"{MASK} ({len(body)} characters, not JSON)"
    return json.dumps(mask_context(data, sensitive), ensure_ascii=False)[:4000]


def dead_letter_of(message: QueueMessage, sensitive: Iterable[str]) -> DeadLetter:
    request, error = None, ""
    try:
        parsed = parse_request(message.body)
    except EmailOpsError as exc:
        error = exc.describe()
    else:
        request = {
            "messageId": parsed.message_id,
            "recipients": [r.email for r in parsed.recipients],
            "context": mask_context(parsed.context, sensitive),
            "dedupeId": parsed.dedupe_id,
        }
    return DeadLetter(
        message_id=message.message_id,
        failure_reason=(message.string_attribute(FAILURE_REASON_ATTRIBUTE) or ""),
        receive_count=message.receive_count,
        sent_at=message.sent_at,
        body=masked_body(message.body, sensitive),
        request=request,
        request_error=error,
        attribute_names=tuple(sorted(message.attributes)),
    )


def _collect(queue: SqsQueue, limit: int, hide_seconds: int) -> tuple[list[QueueMessage], bool]:
    """Receive up to ``limit`` distinct messages, holding them hidden; bounded in calls."""
    found: dict[str, QueueMessage] = {}
    empty = 0
    for _ in range(math.ceil(limit / 10) + 5):
        batch = queue.receive_hidden(max_messages=10, hide_seconds=hide_seconds)
        if not batch:
            empty += 1  # SQS samples servers: one empty answer need not mean an empty queue
            if empty >= 2:
                return list(found.values()), False
            continue
        for message in batch:
            found.setdefault(message.message_id, message)
        if len(found) >= limit:
            return list(found.values())[:limit], True
    return list(found.values()), True


def dead_letter_list(
    *, queue: SqsQueue, sensitive: Iterable[str], limit: int = 100
) -> DeadLetterListing:
    """The messages on the request queue's (``queue``) dead-letter queue (up to ``limit``),
    without consuming any; the context values under ``sensitive`` keys masked."""
    source, dlq = dead_letter_queues(queue=queue)
    limit = max(1, min(MAX_LIST, limit))
    messages, truncated = _collect(dlq, limit, PEEK_HIDE_SECONDS)
    try:
        return DeadLetterListing(
            queue_url=dlq.url,
            source_url=source.url,
            depth=dlq.depth(),
            messages=sorted(
                (dead_letter_of(m, sensitive) for m in messages),
                key=lambda d: (d.sent_at, d.message_id),
            ),
            truncated=truncated,
        )
    finally:
        dlq.release(messages)


def dead_letter_list_run(job: Job, progress, *, adapters: Container) -> dict[str, Any]:
    """The listing job: read the queue once and keep what was read (masked) as the result."""
    listing = dead_letter_list(
        queue=adapters.queue,
        sensitive=adapters.config.console.sensitive_keys,
        limit=int(job.inputs.get("limit") or 100),
    )
    progress.set_total(len(listing.messages))
    progress.set_done(len(listing.messages))
    return {
        "listed": len(listing.messages),
        "queue": listing.queue_url,
        "source": listing.source_url,
        "depth": listing.depth.total,
        "truncated": listing.truncated,
        "messages": [m.as_json() for m in listing.messages],
    }


def dead_letter_listing() -> tuple[Job | None, Job | None, DeadLetterListing | None]:
    """What the page shows, read from the database only: (the latest listing job, the latest one
    that succeeded, its listing less the messages redriven since; a redriven message is gone
    from the dead-letter queue, and never comes back under the same id)."""
    jobs = Job.objects.filter(kind=Job.Kind.DLQ_LIST).select_related("created_by")
    latest = jobs.first()
    done = jobs.filter(state=Job.State.SUCCEEDED).order_by("-finished_at", "-id").first()
    if done is None or not done.result:
        return latest, done, None
    result = done.result
    ids = [m["id"] for m in result.get("messages", [])]
    redriven = set(
        JobStep.objects.filter(
            job__kind=Job.Kind.DLQ_REDRIVE, outcome=JobStep.Outcome.DONE, key__in=ids
        ).values_list("key", flat=True)
    )
    listing = DeadLetterListing(
        queue_url=result.get("queue", ""),
        source_url=result.get("source", ""),
        depth=QueueDepth(visible=result.get("depth", 0), in_flight=0),
        messages=[
            DeadLetter.from_json(m) for m in result.get("messages", []) if m["id"] not in redriven
        ],
        truncated=bool(result.get("truncated")),
    )
    return latest, done, listing


def redrive_inputs(*, ids: list[str] | None, redrive_all: bool, rate: float) -> dict[str, Any]:
    """The job's inputs, validated: either every message or the given ids, at ``rate`` per s."""
    ids = sorted({i.strip() for i in ids or [] if i.strip()})
    if redrive_all == bool(ids):
        raise ValueError("choose the messages to redrive, or all of them (not both)")
    if not 0 < rate <= 100:
        raise ValueError("the rate must be between 0 and 100 messages per second")
    return {"all": redrive_all, "ids": ids, "rate": rate}


def redrive_run(job: Job, progress, *, adapters: Container) -> dict[str, Any]:
    source, dlq = dead_letter_queues(queue=adapters.queue)
    inputs = job.inputs
    rate = float(inputs.get("rate") or 1)
    wanted = set(inputs.get("ids") or [])
    redrive_all = bool(inputs.get("all"))
    copied = set(
        JobStep.objects.filter(job=job, outcome=JobStep.Outcome.DONE).values_list("key", flat=True)
    )
    if job.total is None:
        # "All" means what is there now: a message dead-lettered again during a slow redrive
        # comes back under a new id and is left for the next redrive, so the job ends.
        progress.set_total(dlq.depth().total if redrive_all else len(wanted))
    total = job.total or 0
    progress.set_done(len(copied))
    pacer = Pacer(rate)
    # Receive no more than can be sent while they are hidden.
    batch_size = max(1, min(10, int(rate * 20)))
    hide_seconds = max(30, math.ceil(batch_size / rate) * 2 + 10)
    held: dict[str, QueueMessage] = {}  # received but not ours to redrive: released at the end
    deleted_late = erased_dropped = erased_removed = 0
    empty = 0
    # Bounded: a useful call moves at least one message; choosing ids may need a pass over the rest.
    calls = 3 * total + 20 + (0 if redrive_all else math.ceil(dlq.depth().total / batch_size))
    try:
        for call in range(calls):
            # A resumed run looks once even when all is copied: a copy may await its delete.
            finished = len(copied) >= total if redrive_all else wanted <= copied
            if finished and call:
                break
            batch = dlq.receive_hidden(max_messages=batch_size, hide_seconds=hide_seconds)
            if not batch:
                empty += 1
                if empty >= 3:
                    break
                continue
            empty = 0
            progress.beat()  # passing over others' messages is progress too: we are alive
            for message in batch:
                if message.message_id in copied:
                    dlq.delete(message)  # copied by an earlier run that stopped before the delete
                    deleted_late += 1
                    continue
                mine = redrive_all or message.message_id in wanted
                if not mine or (redrive_all and len(copied) >= total):
                    held[message.message_id] = message
                    continue
                body = without_erased(message.body, adapters=adapters)
                if body is None:  # every recipient was erased since: nothing is sent or kept
                    progress.step(message.message_id, JobStep.Outcome.SKIPPED, erased=True)
                    copied.add(message.message_id)
                    erased_dropped += 1
                    dlq.delete(message)
                    progress.advance()
                    continue
                erased_removed += body != message.body
                pacer.wait()
                new_id = source.send_with_attributes(body, redrive_attributes(message, body))
                letter = dead_letter_of(message, adapters.config.console.sensitive_keys)
                progress.step(
                    message.message_id,
                    JobStep.Outcome.DONE,
                    sqsMessageId=new_id,
                    failureReason=letter.failure_reason,
                    messageId=(letter.request or {}).get("messageId", ""),
                    keptState=STATE_ATTRIBUTE in message.attributes,
                )
                copied.add(message.message_id)
                dlq.delete(message)
                progress.advance()
    finally:
        dlq.release([m for i, m in held.items() if i not in copied])
    missing = sorted(wanted - copied)
    return {
        "redriven": len(copied),
        "notFound": missing,
        "deletedAfterEarlierCopy": deleted_late,
        "erasedDropped": erased_dropped,  # every recipient erased: deleted, not redriven
        "erasedRewritten": erased_removed,  # redriven without the erased recipients
        "source": source.url,
        "deadLetterQueue": dlq.url,
        "rate": rate,
    }


def redrive_result_text(result: dict[str, Any]) -> str:
    text = f"{result.get('redriven', 0)} message(s) redriven to {result.get('source', '')}"
    if result.get("notFound"):
        text += f"; not found on the dead-letter queue: {', '.join(result['notFound'])}"
    return text


def as_json_lines(listing: DeadLetterListing) -> str:
    return json.dumps([m.as_json() for m in listing.messages], indent=2, ensure_ascii=False)


def without_erased(body: str, *, adapters: Container) -> str | None:
    """The request without its erased recipients (erasure's tombstones); None when every
    recipient was erased. A body that is not a request is left as it is (and reads no
    tombstone: ``adapters.tombstones`` is reached only for a request with recipients)."""
    try:
        data = json.loads(body)
    except ValueError:
        return body
    recipients = data.get("recipients") if isinstance(data, dict) else None
    if not isinstance(recipients, list) or not recipients:
        return body
    tombstones = adapters.tombstones
    kept = [
        r
        for r in recipients
        if not (isinstance(r, dict) and tombstones.erased_at(str(r.get("email", ""))) is not None)
    ]
    if len(kept) == len(recipients):
        return body
    return json.dumps(data | {"recipients": kept}, ensure_ascii=False) if kept else None


def redrive_attributes(message: QueueMessage, body: str) -> dict[str, Any]:
    """What a redriven copy carries: not the reason it failed, and a fresh retry budget (someone
    fixed the cause), but still the sends SES already accepted, so none goes out twice. Only a
    state we sealed counts (a producer's is dropped), and the copy's is sealed again, for ``body``
    (the copy's: erased recipients removed)."""
    attributes = forwardable_attributes(message.attributes)
    if STATE_ATTRIBUTE in attributes:
        seal = state_seal()
        state = seal.open(message.string_attribute(STATE_ATTRIBUTE), message.body).state
        sealed = seal.seal(state.redriven(), body)
        attributes[STATE_ATTRIBUTE] = {"DataType": "String", "StringValue": sealed}
    return attributes
