"""Reads for the operations pages: jobs, their progress and steps, and the beat readings."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from jobs.models import Job, JobStep
from monitoring.checks import DLQ_DEPTH, STUCK_CLAIMS, reading
from monitoring.models import OpsReading
from templates_admin import roles

__all__ = [
    "job_details_allowed",
    "job_inputs_shown",
    "job_list",
    "job_progress",
    "job_steps",
    "ops_readings",
]

_SEALED = "sealedAddress"  # templates_admin.jobs.erasure.SEALED: never shown


# Kinds whose page only those who may start them see: an erasure's reason and masked address
# are about one person; a webhook replay names an endpoint (admins' business, like its secret).
_DETAILS_NEED = {
    Job.Kind.ERASE_RECIPIENT: roles.ERASE_RECIPIENT,
    Job.Kind.WEBHOOK_REPLAY: roles.MANAGE_WEBHOOKS,
}


def job_details_allowed(job: Job, user: Any) -> bool:
    """An erasure job's page is for those who may erase (Support leads) and superusers only, a
    webhook replay's for those who manage webhooks."""
    needed = _DETAILS_NEED.get(job.kind)
    return needed is None or user.has_perm(needed)


def job_inputs_shown(job: Job, user: Any) -> dict[str, Any]:
    """The inputs as the page shows them: never the sealed address; an erasure's masked address
    only to the one who started it and to superusers."""
    shown = {k: v for k, v in job.inputs.items() if k != _SEALED}
    if job.kind == Job.Kind.ERASE_RECIPIENT and not (
        user.is_superuser or (job.created_by_id is not None and job.created_by_id == user.pk)
    ):
        shown.pop("addressMasked", None)
    return shown


def job_list(*, limit: int = 50) -> QuerySet[Job]:
    return Job.objects.select_related("created_by")[:limit]


def job_progress(job: Job) -> dict[str, Any]:
    """What the progress bar polls: small, and enough to draw the bar and say where it is."""
    if job.total is None:
        text = "waiting for a worker" if job.state == Job.State.PENDING else "starting"
    else:
        text = f"{job.done} of {job.total}"
    if job.state == Job.State.FAILED:
        text = f"failed: {job.error}"
    return {
        "id": job.pk,
        "state": job.state,
        "done": job.done,
        "total": job.total,
        "finished": job.is_finished,
        "text": text,
    }


def job_steps(job: Job, *, limit: int = 500) -> QuerySet[JobStep]:
    return JobStep.objects.filter(job=job)[:limit]


def ops_readings() -> dict[str, OpsReading | None]:
    return {"dlq": reading(DLQ_DEPTH), "stuck": reading(STUCK_CLAIMS)}
