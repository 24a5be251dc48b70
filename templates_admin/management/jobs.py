"""Jobs started from the command line: recorded like the console's (the audit), with the OS user
as their origin, and run in the command's own process rather than handed to a worker."""

from __future__ import annotations

import getpass
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.management.base import CommandError

from jobs.engine import job_create, job_run
from jobs.models import Job

if TYPE_CHECKING:
    from emailops.container import Container


def cli_job_create(
    *, kind: str, inputs: dict[str, Any], user: AbstractBaseUser | None = None
) -> Job:
    """Record the job; raises PermissionDenied when ``user`` may not start it."""
    return job_create(
        kind=kind, inputs=inputs, user=user, origin=f"cli:{getpass.getuser()}", dispatch=False
    )


def cli_job_run(job: Job, *, adapters: Container, failure: str) -> Job:
    """Run ``job`` here with the command's ``adapters``; a job that did not succeed stops the
    command with ``failure``, a format string given the job (``"redrive job #{job.pk} failed:
    {job.error}"``)."""
    job = job_run(job_id=job.pk, adapters=adapters)
    if job.state != Job.State.SUCCEEDED:
        raise CommandError(failure.format(job=job))
    return job
