"""The job life cycle: one runner at a time, orphans taken over, errors kept, finished jobs left."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from django.utils import timezone

from emailops import container
from emailops.core.errors import TransientError
from jobs import engine, registry
from jobs.models import Job

pytestmark = pytest.mark.django_db


@pytest.fixture
def runner(monkeypatch):
    calls: list[int] = []

    def run(job, progress, *, adapters):
        assert adapters is container.current()  # the process's, handed down by the engine
        calls.append(job.pk)
        progress.set_total(2)
        progress.advance()
        if job.inputs.get("fail"):
            raise TransientError("read queue depth", key="q", reason="ServiceUnavailable")
        progress.advance()
        return {"ok": True}

    kind = Job.Kind.TEMPLATE_CHECK
    monkeypatch.setitem(registry._KINDS, kind, replace(registry._KINDS[kind], runner=run))
    return calls


def new_job(**inputs) -> Job:
    return engine.job_create(
        kind=Job.Kind.TEMPLATE_CHECK, inputs=inputs, user=None, origin="test", dispatch=False
    )


def test_a_job_runs_once_and_records_its_progress(runner):
    job = engine.job_run(job_id=new_job().pk, adapters=container.current())
    assert (job.state, job.done, job.total, job.result, job.runs) == (
        "SUCCEEDED",
        2,
        2,
        {"ok": True},
        1,
    )
    assert job.started_at and job.finished_at and job.heartbeat_at
    engine.job_run(job_id=job.pk, adapters=container.current())
    assert runner == [job.pk]


def test_a_live_run_is_not_joined_but_an_orphan_is_taken_over(runner):
    job = new_job()
    Job.objects.filter(pk=job.pk).update(state=Job.State.RUNNING, heartbeat_at=timezone.now())
    assert (
        engine.job_run(job_id=job.pk, adapters=container.current()).state == Job.State.RUNNING
        and runner == []
    )
    assert not engine.job_is_orphaned(Job.objects.get(pk=job.pk))
    stale = timezone.now() - engine.HEARTBEAT_TIMEOUT - timedelta(seconds=1)
    Job.objects.filter(pk=job.pk).update(heartbeat_at=stale)
    assert engine.job_is_orphaned(Job.objects.get(pk=job.pk))
    assert engine.job_run(
        job_id=job.pk, adapters=container.current()
    ).state == Job.State.SUCCEEDED and runner == [job.pk]


def test_an_error_is_kept_and_the_job_can_be_resumed(runner):
    job = engine.job_run(job_id=new_job(fail=True).pk, adapters=container.current())
    assert job.state == Job.State.FAILED and job.done == 1
    assert job.error == "read queue depth [q]: ServiceUnavailable"
    engine.job_retry(job_id=job.pk, user=None, dispatch=False)
    assert Job.objects.get(pk=job.pk).state == Job.State.PENDING
    assert engine.job_run(job_id=job.pk, adapters=container.current()).runs == 2


def test_a_broker_that_refuses_the_job_fails_it_with_the_reason(runner, settings):
    from emailops.celery import app
    from tests.celery_worker import using_broker

    job = engine.job_create(
        kind=Job.Kind.TEMPLATE_CHECK, inputs={}, user=None, origin="test", dispatch=False
    )
    with using_broker(app, "redis://127.0.0.1:1/0"):  # nothing listens on port 1
        engine.job_dispatch(job_id=job.pk)
    job.refresh_from_db()
    assert job.state == Job.State.FAILED and "could not hand the job to a worker" in job.error


def test_every_kind_is_registered_with_a_runner_that_imports_and_a_permission():
    """The console registers its kinds by dotted path: a typo would surface only at a job's run."""
    for kind in Job.Kind:
        assert callable(registry.runner_of(kind)), kind
        assert registry.permission_of(kind).startswith("templates_admin."), kind
    assert registry.loggable_inputs(Job.Kind.ERASE_RECIPIENT, {"addressHash": "a" * 64}) == {
        "addressHash": "a" * 16
    }


def test_the_periodic_work_beat_runs_by_name_is_registered_and_imports():
    from django.utils.module_loading import import_string

    from monitoring import periodic

    for name in ("template_check_daily", "reputation"):
        assert callable(import_string(periodic._REGISTERED[name])), name


def test_the_runner_is_given_the_adapters_its_run_was_given(monkeypatch):
    """The engine reaches for no container: whatever the entry (a task, a command) passed is
    what the job's work uses."""
    given = []

    def run(job, progress, *, adapters):
        given.append(adapters)
        return {}

    kind = Job.Kind.TEMPLATE_CHECK
    monkeypatch.setitem(registry._KINDS, kind, replace(registry._KINDS[kind], runner=run))
    adapters = object()
    assert engine.job_run(job_id=new_job().pk, adapters=adapters).state == Job.State.SUCCEEDED
    assert given == [adapters]
