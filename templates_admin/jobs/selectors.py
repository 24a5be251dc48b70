"""Reads for the operations pages: jobs, their progress and steps, and the beat readings."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from templates_admin.jobs.monitoring import DLQ_DEPTH, STUCK_CLAIMS, reading
from templates_admin.models import Job, JobStep, OpsReading

__all__ = ["job_list", "job_progress", "job_steps", "ops_readings"]


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
