"""Bulk resend: the FAILED (and/or transiently BOUNCED) rows of one messageId in a time range,
each resent through the journal's own ``email_resend``, so each is audited (an EmailAction in the
name of the person who started the job) and linked (original row → new row).

Selection: with recipients given, the journal search (GSI Queries, ``journal_search``); without,
a bounded Scan (``JournalScan.rows_of_message``): the journal has no messageId index. The
selection is frozen as pending ``JobStep``s on the first run, so a retried job resends exactly
the rows it chose, never the new rows its own resends wrote.

Idempotent per row: the resend's dedupeId is derived from the job and the row, and
``email_resend`` returns the earlier action for a dedupeId it has seen; a request that reached the
queue twice has one journal key, so the consumer sends it once.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied, ValidationError

from emailops.core.journal_row import JournalRow
from emailops.core.pacing import Pacer
from jobs.models import Job, JobStep
from templates_admin.journal import selectors as journal_selectors
from templates_admin.journal.services import email_resend
from templates_admin.models import EmailAction

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = ["SELECTIONS", "bulk_resend_inputs", "bulk_resend_run", "row_is_selected"]

FAILED = "FAILED"
BOUNCED_TRANSIENT = "BOUNCED_TRANSIENT"
SELECTIONS = {FAILED: "FAILED rows", BOUNCED_TRANSIENT: "BOUNCED rows, bounce type Transient"}
MAX_ROWS = 5000  # one job; a larger batch is a sign the filters are wrong
_SEARCH_PAGES = 40  # per recipient, pages of journal_search.MAX_LIMIT rows


def default_rate(*, adapters: Container) -> float:
    """The shared send rate when set (the consumers apply it anyway), else 5 per second."""
    rate = adapters.config.sending.max_send_rate
    return rate if rate else 5.0


def bulk_resend_inputs(
    *,
    message_id: str,
    since: datetime,
    until: datetime,
    selections: list[str],
    reason: str,
    rate: float,
    recipients: list[str] | None = None,
) -> dict[str, Any]:
    message_id, reason = message_id.strip(), reason.strip()
    if not message_id:
        raise ValueError("a messageId is required")
    if not reason:
        raise ValueError("say why you are resending: the reason is kept with every resend")
    if since > until:
        raise ValueError("the time range ends before it starts")
    unknown = set(selections) - set(SELECTIONS)
    if not selections or unknown:
        raise ValueError(f"choose rows from {', '.join(SELECTIONS)}")
    if not 0 < rate <= 100:
        raise ValueError("the rate must be between 0 and 100 emails per second")
    recipients = [r.strip() for r in recipients or [] if r.strip()]
    if not_addresses := [r for r in recipients if not journal_selectors.looks_like_email(r)]:
        raise ValueError(f"not email addresses: {', '.join(not_addresses)}")
    return {
        "message_id": message_id,
        "since": int(since.timestamp()),
        "until": int(until.timestamp()),
        "selections": sorted(selections),
        "recipients": sorted(set(recipients)),
        "reason": reason,
        "rate": rate,
    }


def row_is_selected(row: JournalRow, selections: list[str]) -> bool:
    if FAILED in selections and row.status == FAILED:
        return True
    return (
        BOUNCED_TRANSIENT in selections
        and row.delivery.status == "BOUNCED"
        and row.delivery.bounce_type == "Transient"
    )


def _candidates(inputs: dict[str, Any], adapters: Container) -> tuple[list[JournalRow], bool]:
    """Rows of the messageId in range; ``partial`` when a read bound cut the selection short."""
    if inputs["recipients"]:
        rows, partial = [], False
        for recipient in inputs["recipients"]:
            cursor = None
            for _ in range(_SEARCH_PAGES):
                result = journal_selectors.journal_search(
                    adapters=adapters,
                    query=recipient,
                    message_id=inputs["message_id"],
                    since=datetime.fromtimestamp(inputs["since"], UTC),
                    until=datetime.fromtimestamp(inputs["until"], UTC),
                    cursor=cursor,
                    limit=journal_selectors.MAX_LIMIT,
                )
                rows += result.rows
                cursor = result.next_cursor
                if not cursor:
                    break
            else:
                partial = True
        return rows, partial
    page = adapters.journal_scan.rows_of_message(
        message_id=inputs["message_id"],
        since=inputs["since"],
        until=inputs["until"],
        max_read=adapters.config.ops.scan_max_items,
    )
    return page.rows, page.next_key is not None


def _in_scope(row: JournalRow, inputs: dict[str, Any]) -> bool:
    """Checked again on every row, whatever the read path filtered on."""
    timestamp = row.timestamp
    return (
        row.message_id == inputs["message_id"]
        and isinstance(timestamp, int)
        and inputs["since"] <= timestamp <= inputs["until"]
        and row_is_selected(row, inputs["selections"])
    )


def _select(job: Job, progress, adapters: Container) -> dict[str, Any]:
    rows, partial = _candidates(job.inputs, adapters)
    chosen = sorted(
        {r.key: r for r in rows if _in_scope(r, job.inputs)}.values(),
        key=lambda r: (r.timestamp or 0, r.key),
    )
    capped = len(chosen) > MAX_ROWS
    JobStep.objects.bulk_create(
        [JobStep(job=job, key=r.key, detail={"recipient": r.recipient}) for r in chosen[:MAX_ROWS]],
        ignore_conflicts=True,
    )
    selection = {"matched": len(chosen), "partial": partial, "capped": capped}
    Job.objects.filter(pk=job.pk).update(result={"selection": selection})
    progress.set_total(min(len(chosen), MAX_ROWS))
    return selection


def resend_dedupe_id(job: Job, key: str) -> str:
    return f"resend-job{job.pk}-{hashlib.sha256(key.encode()).hexdigest()[:32]}"


def bulk_resend_run(job: Job, progress, *, adapters: Container) -> dict[str, Any]:
    if job.created_by is None:
        raise PermissionDenied("a bulk resend is made in someone's name: start it as a user")
    selection, pending = progress.resume(lambda job, progress: _select(job, progress, adapters))
    pacer = Pacer(float(job.inputs.get("rate") or default_rate(adapters=adapters)))
    reason = f"bulk resend (job #{job.pk}): {job.inputs['reason']}"
    for step in pending:
        dedupe_id = resend_dedupe_id(job, step.key)
        earlier = (
            EmailAction.objects.filter(kind=EmailAction.Kind.RESEND, original_key=step.key)
            .exclude(dedupe_id=dedupe_id)
            .first()
        )
        if earlier is not None:
            progress.step(
                step.key,
                JobStep.Outcome.SKIPPED,
                recipient=step.detail.get("recipient", ""),
                why=f"already resent on {earlier.at:%Y-%m-%d %H:%M} UTC by {earlier.user}",
                journal_key=earlier.journal_key,
            )
            progress.advance()
            continue
        pacer.wait()
        try:
            action = email_resend(
                adapters=adapters,
                key=step.key,
                reason=reason,
                user=job.created_by,
                dedupe_id=dedupe_id,
            )
        except ValidationError as exc:
            progress.step(
                step.key,
                JobStep.Outcome.FAILED,
                recipient=step.detail.get("recipient", ""),
                why=" ".join(exc.messages),
            )
        else:
            progress.step(
                step.key,
                JobStep.Outcome.DONE,
                recipient=action.recipient,
                action=action.pk,
                journal_key=action.journal_key,
                sqs_message_id=action.sqs_message_id,
            )
        progress.advance()
    counts = progress.counts()
    return {"selection": selection, "resent": counts["done"], **counts}
