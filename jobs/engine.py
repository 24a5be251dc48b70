"""Jobs: create one (checking who may), run it (a Celery task calls ``job_run`` with the id and
its process's adapters, which the runner is given: ``runner(job, progress, adapters=...)``), and
record its progress. Each kind's work lives with the app that offers it, which registers it
(``jobs.registry``: the runner, and the permission to start it).

A job is safe to run twice: ``job_run`` claims it with a heartbeat (a second delivery of the task
while the first still runs does nothing), a finished job is left alone, and each kind records a
``JobStep`` per item once the item's side effect happened, so a resumed run skips it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from emailops.celery import app as celery_app
from emailops.core.errors import EmailOpsError
from emailops.core.events import EventLog
from jobs import registry
from jobs.models import Job, JobStep

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = [
    "HEARTBEAT_TIMEOUT",
    "RUN_JOB_TASK",
    "Progress",
    "job_create",
    "job_dispatch",
    "job_is_orphaned",
    "job_retry",
    "job_run",
]

logger = logging.getLogger("jobs")
RUN_JOB_TASK = "worker.run_job"  # worker.tasks.run_job
log = EventLog(logger)

# A RUNNING job whose heartbeat is older than this is taken to be orphaned (its worker died).
HEARTBEAT_TIMEOUT = timedelta(minutes=2)


class Progress:
    """What a runner reports as it goes; every call is also the job's heartbeat."""

    def __init__(self, job: Job) -> None:
        self.job = job

    def _update(self, **fields: Any) -> None:
        Job.objects.filter(pk=self.job.pk).update(heartbeat_at=timezone.now(), **fields)

    def set_total(self, total: int) -> None:
        self.job.total = total
        self._update(total=total)

    def set_done(self, done: int) -> None:
        self.job.done = done
        self._update(done=done)

    def advance(self, count: int = 1) -> None:
        self.job.done += count
        self._update(done=F("done") + count)

    def beat(self) -> None:
        self._update()

    def resume(
        self, select: Callable[[Job, Progress], dict[str, Any]]
    ) -> tuple[dict[str, Any], Iterator[JobStep]]:
        """The job's selection, frozen by ``select`` on its first run (it writes the steps and
        ``result["selection"]``), and the steps still pending; the others count as done, so a
        resumed job skips what it did."""
        if self.job.total is None:
            selection = select(self.job, self)
        else:
            selection = (self.job.result or {}).get("selection", {})
        steps = JobStep.objects.filter(job=self.job)
        self.set_done(steps.exclude(outcome=JobStep.Outcome.PENDING).count())
        return selection, steps.filter(outcome=JobStep.Outcome.PENDING).iterator()

    def counts(self) -> dict[str, int]:
        """How many of the job's steps ended done, skipped and failed (the runners' result)."""
        steps = JobStep.objects.filter(job=self.job)
        ended = (JobStep.Outcome.DONE, JobStep.Outcome.SKIPPED, JobStep.Outcome.FAILED)
        return {outcome.value: steps.filter(outcome=outcome).count() for outcome in ended}

    def step(self, key: str, outcome: str, **detail: Any) -> JobStep:
        """Record one item's outcome (idempotent: the item's row is updated, never duplicated)."""
        step, _ = JobStep.objects.update_or_create(
            job=self.job, key=key, defaults={"outcome": outcome, "detail": detail}
        )
        return step


def job_create(
    *,
    kind: str,
    inputs: dict[str, Any],
    user: AbstractBaseUser | None,
    origin: str = "console",
    dispatch: bool = True,
) -> Job:
    """Record a job (the audit: who, when, what) and, with ``dispatch``, hand it to a worker once
    the record is committed. ``user`` None is the system (Celery beat, a CLI run without one)."""
    if user is not None and not user.has_perm(registry.permission_of(kind)):
        raise PermissionDenied(
            f"starting a {Job.Kind(kind).label} needs {registry.permission_of(kind)}"
        )
    job = Job.objects.create(kind=kind, inputs=inputs, created_by=user, origin=origin)
    log.info(
        "job.created",
        job=job.pk,
        kind=kind,
        user=user.get_username() if user else "",
        origin=origin,
        inputs=registry.loggable_inputs(kind, inputs),
    )
    if dispatch:
        transaction.on_commit(lambda: job_dispatch(job_id=job.pk))
    return job


def job_dispatch(*, job_id: int) -> None:
    """Hand the job to a worker. If the broker cannot take it, the job is FAILED with the reason
    (and can be resumed from its page) instead of waiting forever or breaking the request."""
    try:
        # By name: the console enqueues, the worker package runs; neither imports the other.
        celery_app.send_task(
            RUN_JOB_TASK, args=[job_id], retry_policy={"max_retries": 2, "interval_start": 0.5}
        )
    except Exception as exc:  # kombu raises its own and socket errors alike
        error = f"could not hand the job to a worker (broker: {type(exc).__name__}: {exc})"
        Job.objects.filter(pk=job_id, state=Job.State.PENDING).update(
            state=Job.State.FAILED, error=error, finished_at=timezone.now()
        )
        log.error("job.dispatch_failed", job=job_id, error=error)


def _claim(job_id: int) -> bool:
    """PENDING, or RUNNING with a stale heartbeat (an orphan) → RUNNING, ours. One UPDATE."""
    now = timezone.now()
    claimable = Q(state=Job.State.PENDING) | Q(
        state=Job.State.RUNNING, heartbeat_at__lt=now - HEARTBEAT_TIMEOUT
    )
    claimed = Job.objects.filter(claimable, pk=job_id).update(
        state=Job.State.RUNNING, heartbeat_at=now, runs=F("runs") + 1
    )
    Job.objects.filter(pk=job_id, started_at__isnull=True).update(started_at=now)
    return bool(claimed)


def job_run(*, job_id: int, adapters: Container) -> Job:
    """Run (or resume) the job with ``adapters`` (the running process's, handed to the runner);
    returns it as it ended. A finished job, or one another worker is running, is returned
    untouched."""
    if not _claim(job_id):
        return Job.objects.get(pk=job_id)
    job = Job.objects.get(pk=job_id)
    log.info("job.started", job=job.pk, kind=job.kind, run=job.runs)
    runner = registry.runner_of(job.kind)
    try:
        result = runner(job, Progress(job), adapters=adapters)
    except Exception as exc:
        # Kept, not swallowed: the job page and the log say what stopped it; steps already
        # recorded stay, so running it again resumes where it stopped.
        error = exc.describe() if isinstance(exc, EmailOpsError) else f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, EmailOpsError):
            logger.exception("job %s failed unexpectedly", job.pk)
        Job.objects.filter(pk=job.pk).update(
            state=Job.State.FAILED, error=error, finished_at=timezone.now()
        )
        log.error("job.failed", job=job.pk, kind=job.kind, error=error)
    else:
        Job.objects.filter(pk=job.pk).update(
            state=Job.State.SUCCEEDED, result=result, error="", finished_at=timezone.now()
        )
        log.info("job.succeeded", job=job.pk, kind=job.kind, done=job.done, total=job.total)
    return Job.objects.get(pk=job.pk)


def job_is_orphaned(job: Job) -> bool:
    """RUNNING, but its worker stopped beating: it died mid-job."""
    stale = timezone.now() - HEARTBEAT_TIMEOUT
    return job.state == Job.State.RUNNING and (job.heartbeat_at is None or job.heartbeat_at < stale)


def job_retry(*, job_id: int, user: AbstractBaseUser | None, dispatch: bool = True) -> Job:
    """Run a FAILED or orphaned job again; its recorded steps are kept and skipped."""
    job = Job.objects.get(pk=job_id)
    if user is not None and not user.has_perm(registry.permission_of(job.kind)):
        raise PermissionDenied
    resumable = Job.objects.filter(pk=job_id, state=Job.State.FAILED).update(
        state=Job.State.PENDING, finished_at=None
    ) or job_is_orphaned(job)  # an orphan stays RUNNING: the worker's claim takes it over
    if resumable:
        log.info("job.retried", job=job_id, user=user.get_username() if user else "")
        if dispatch:
            transaction.on_commit(lambda: job_dispatch(job_id=job_id))
    return Job.objects.get(pk=job_id)
