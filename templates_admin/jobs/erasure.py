"""Recipient erasure as a job: the Job row is the audit (who, when, why, and what was removed,
per kind); the work is ``templates_admin.journal.erasure.recipient_erase`` plus the request
dead-letter queue and, when asked, a suppression entry. Safe to repeat, so a retried job simply
finishes the deletion.

The job never holds the address in clear: its inputs keep the keyed hash and a masked form
(``d***@example.com``), and the address itself sealed (Fernet, under a key derived from
ERASURE_HASH_KEY) only until the job succeeds, for the worker that runs it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from cryptography.fernet import Fernet

from emailops.aws.sqs import FAILURE_REASON_ATTRIBUTE, QueueMessage, SqsQueue
from emailops.core.contract import address_key
from emailops.core.erasure import Tombstones, address_scrubber, masked_address
from emailops.core.ports import SuppressionWriter
from jobs.models import Job, JobStep
from templates_admin.jobs.dlq import dead_letter_queues
from templates_admin.journal.erasure import checked_address, recipient_erase

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = ["erasure_inputs", "erasure_run", "unsealed_address"]

SEALED = "sealedAddress"
_MAX_DEAD_LETTERS = 10_000  # a bound on the pass over the dead-letter queue


def _fernet(adapters: Container) -> Fernet:
    key = adapters.config.aws.erasure_hash_key.encode()
    return Fernet(base64.urlsafe_b64encode(hashlib.sha256(b"erasure-job-seal:" + key).digest()))


def erasure_inputs(
    *,
    adapters: Container,
    address: str,
    reason: str,
    also_suppress: bool = False,
    keep_preferences: bool = False,
) -> dict[str, Any]:
    address, reason = checked_address(address), reason.strip()
    if not reason:
        raise ValueError("say why (e.g. the erasure request's reference): it is kept in the audit")
    return {
        "addressHash": adapters.tombstones.hash(address),
        "addressMasked": masked_address(address),
        "reason": reason,
        "alsoSuppress": also_suppress,
        "keepPreferences": keep_preferences,
        SEALED: _fernet(adapters).encrypt(address.encode()).decode(),
    }


def loggable_inputs(inputs: dict[str, Any]) -> dict[str, Any]:
    """What the log may keep of an erasure's inputs: only a short form of the address's keyed
    hash (the log outlives the erasure; the reason may name the person too)."""
    return {"addressHash": str(inputs.get("addressHash", ""))[:16]}


def unsealed_address(job: Job, *, adapters: Container) -> str:
    sealed = job.inputs.get(SEALED)
    if not sealed and job.inputs.get("address"):
        return job.inputs["address"]  # a job started before addresses were sealed
    if not sealed:
        raise ValueError("this erasure job has finished: its address is no longer kept")
    return _fernet(adapters).decrypt(sealed.encode()).decode()


def _without(body: str, wanted: str) -> str | None:
    """The request without the erased recipient; None when nothing may be kept (it was the
    only recipient, or the body is not a request but names the address)."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    recipients = data.get("recipients") if isinstance(data, dict) else None
    if not isinstance(recipients, list):
        return None if wanted in body.lower() else body
    kept = [
        r
        for r in recipients
        if not (isinstance(r, dict) and address_key(str(r.get("email", ""))) == wanted)
    ]
    if len(kept) == len(recipients):
        return body if wanted not in body.lower() else None  # named elsewhere: not ours to edit
    return json.dumps(data | {"recipients": kept}, ensure_ascii=False) if kept else None


def _attributes(message: QueueMessage, wanted: str) -> dict[str, Any]:
    attributes = dict(message.attributes)
    reason = message.string_attribute(FAILURE_REASON_ATTRIBUTE) or ""
    if wanted in address_key(reason) or wanted in reason.lower():
        attributes[FAILURE_REASON_ATTRIBUTE] = {
            "DataType": "String",
            "StringValue": "(the reason named an erased recipient)",
        }
    return attributes


def erase_dead_letters(address: str, *, queue: SqsQueue) -> tuple[int, int]:
    """Every message naming ``address`` on the request queue's (``queue``) dead-letter queue:
    rewritten without it (a new message, the old one deleted) or dropped. Returns (rewritten,
    dropped)."""
    _, dlq = dead_letter_queues(queue=queue)
    wanted = address_key(address)
    rewritten = dropped = 0
    seen: set[str] = set()
    held: list[QueueMessage] = []
    empty = 0
    try:
        while len(seen) < _MAX_DEAD_LETTERS and empty < 2:
            batch = dlq.receive_hidden(max_messages=10, hide_seconds=60)
            fresh = [m for m in batch if m.message_id not in seen]
            held += [m for m in batch if m.message_id in seen]  # ours, or looked at: released
            if not fresh:
                empty += 1  # SQS samples servers: one empty answer need not mean an empty queue
                continue
            empty = 0
            for message in fresh:
                seen.add(message.message_id)
                kept = _without(message.body, wanted)
                if kept == message.body:
                    held.append(message)
                    continue
                if kept is not None:
                    seen.add(dlq.send_with_attributes(kept, _attributes(message, wanted)))
                    rewritten += 1
                else:
                    dropped += 1
                dlq.delete(message)
    finally:
        dlq.release(held)
    return rewritten, dropped


def erase_from_jobs(address: str, *, own: int, tombstones: Tombstones) -> int:
    """Other jobs' inputs, results and steps naming ``address`` (a bulk resend's recipients, a
    dead-letter listing's messages, a step's row key): the address replaced by its ``erased:``
    name. Returns how many jobs were changed. Jobs are few (pruned by AUDIT_RETENTION_DAYS)."""
    scrubbed = address_scrubber(address, tombstones.name(address))
    changed = 0
    for job in Job.objects.exclude(pk=own).iterator():
        inputs, result = scrubbed(job.inputs), scrubbed(job.result)
        if (inputs, result) != (job.inputs, job.result):
            Job.objects.filter(pk=job.pk).update(inputs=inputs, result=result)
            changed += 1
        for step in JobStep.objects.filter(job=job):
            key, detail = scrubbed(step.key), scrubbed(step.detail)
            if (key, detail) != (step.key, step.detail):
                JobStep.objects.filter(pk=step.pk).update(key=key, detail=detail)
    return changed


def _suppress(address: str, suppression_list: SuppressionWriter) -> bool:
    return suppression_list.add(
        address_key(address),
        reason="MANUAL",
        detail="asked to receive no more mail (erasure)",
        source="erasure",
        now=int(time.time()),
    )


def erasure_run(job: Job, progress: Any, *, adapters: Container) -> dict[str, Any]:
    actor = job.created_by.get_username() if job.created_by else job.origin
    address = unsealed_address(job, adapters=adapters)
    report = recipient_erase(
        adapters=adapters,
        address=address,
        actor=actor,
        keep_preferences=bool(job.inputs.get("keepPreferences")),
    )
    rewritten, dropped = erase_dead_letters(address, queue=adapters.queue)
    jobs = erase_from_jobs(address, own=job.pk, tombstones=adapters.tombstones)
    suppressed = bool(job.inputs.get("alsoSuppress")) and _suppress(
        address, adapters.suppression_list
    )
    report = replace(
        report,
        dead_letters_rewritten=rewritten,
        dead_letters_dropped=dropped,
        jobs_scrubbed=jobs,
        suppressed=suppressed,
    )
    # Done: the address is no longer needed, and no longer kept (not even sealed).
    job.inputs = {k: v for k, v in job.inputs.items() if k not in (SEALED, "address")}
    job.inputs.setdefault("addressMasked", report.address_masked)
    Job.objects.filter(pk=job.pk).update(inputs=job.inputs)
    progress.set_total(1)
    progress.set_done(1)
    return report.as_result()
