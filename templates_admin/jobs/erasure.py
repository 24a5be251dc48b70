"""Recipient erasure as a job: the Job row is the audit (who, when, which address, why, and what
was removed, per kind); the work is ``templates_admin.journal.erasure.recipient_erase``, which is
safe to repeat, so a retried job simply finishes the deletion."""

from __future__ import annotations

from typing import Any

from templates_admin.journal.erasure import recipient_erase
from templates_admin.journal.selectors import looks_like_email
from templates_admin.models import Job

__all__ = ["erasure_inputs", "erasure_run"]


def erasure_inputs(*, address: str, reason: str) -> dict[str, Any]:
    address, reason = address.strip(), reason.strip()
    if not looks_like_email(address):
        raise ValueError(f"{address!r} is not an email address")
    if not reason:
        raise ValueError("say why (e.g. the erasure request's reference): it is kept in the audit")
    return {"address": address, "reason": reason}


def erasure_run(job: Job, progress: Any) -> dict[str, Any]:
    actor = job.created_by.get_username() if job.created_by else job.origin
    report = recipient_erase(address=job.inputs["address"], actor=actor)
    progress.set_total(1)
    progress.set_done(1)
    return report.as_result()
