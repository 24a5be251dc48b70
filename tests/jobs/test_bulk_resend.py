"""Bulk resend: which rows it picks, one audited resend each, paced, and never twice."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest
from django.core.exceptions import PermissionDenied

from emailops import container
from jobs.engine import job_create, job_retry, job_run
from jobs.models import Job, JobStep
from templates_admin.jobs import bulk_resend
from templates_admin.models import EmailAction
from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = pytest.mark.django_db


def moment(offset: int) -> datetime:
    return datetime.fromtimestamp(BASE_TIME + offset, UTC)


@pytest.fixture
def rows(aws):
    failed = dict(status="FAILED", Error="send email [x]: Throttling: slow down")
    put_rows(
        aws.dynamodb,
        "email-journal",
        [
            journal_row("a@example.com", at=BASE_TIME + 10, key="k-failed-a", **failed),
            journal_row("b@example.com", at=BASE_TIME + 20, key="k-failed-b", **failed),
            journal_row(
                "c@example.com",
                at=BASE_TIME + 30,
                key="k-bounced-transient",
                DeliveryStatus="BOUNCED",
                BounceType="Transient",
            ),
            journal_row(
                "d@example.com",
                at=BASE_TIME + 40,
                key="k-bounced-permanent",
                DeliveryStatus="BOUNCED",
                BounceType="Permanent",
            ),
            journal_row("e@example.com", at=BASE_TIME + 50, key="k-sent"),
            journal_row("f@example.com", at=BASE_TIME + 5000, key="k-failed-late", **failed),
            journal_row(
                "a@example.com", at=BASE_TIME + 15, key="k-other", message_id="x", **failed
            ),
        ],
    )
    return aws


def start(user, **overrides):
    arguments = (
        dict(
            message_id="added-to-team",
            since=moment(0),
            until=moment(1000),
            selections=[bulk_resend.FAILED, bulk_resend.BOUNCED_TRANSIENT],
            reason="SES throttled us on Monday",
            rate=100,
        )
        | overrides
    )
    return job_create(
        kind=Job.Kind.BULK_RESEND,
        inputs=bulk_resend.bulk_resend_inputs(**arguments),
        user=user,
        dispatch=False,
    )


def queued(aws) -> list[dict]:
    return [json.loads(m["Body"]) for m in aws.queue_messages(aws.queue_url)]


def test_resends_failed_and_transient_bounces_of_the_message_in_range(rows, make_user):
    lead = make_user("Support leads")
    job = job_run(job_id=start(lead).pk, adapters=container.current())
    assert job.state == Job.State.SUCCEEDED, job.error
    assert (job.total, job.done, job.result["resent"]) == (3, 3, 3)
    actions = EmailAction.objects.order_by("original_key")
    assert [a.original_key for a in actions] == ["k-bounced-transient", "k-failed-a", "k-failed-b"]
    assert all(a.user == lead and "SES throttled us" in a.reason for a in actions)
    assert all(f"job #{job.pk}" in a.reason for a in actions)
    bodies = queued(rows)
    assert sorted(b["recipients"][0]["email"] for b in bodies) == [
        "a@example.com",
        "b@example.com",
        "c@example.com",
    ]
    assert {b["dedupeId"] for b in bodies} == {a.dedupe_id for a in actions}
    step = JobStep.objects.get(job=job, key="k-failed-a")
    assert step.detail["journal_key"] == actions.get(original_key="k-failed-a").journal_key


def test_by_recipient_uses_the_journal_search(rows, make_user):
    job = start(make_user("Support leads"), recipients=["A@example.com"], selections=["FAILED"])
    job = job_run(job_id=job.pk, adapters=container.current())
    assert job.state == Job.State.SUCCEEDED, job.error
    assert [a.original_key for a in EmailAction.objects.all()] == ["k-failed-a"]


def test_a_retried_job_resends_nothing_twice(rows, make_user):
    job = job_run(job_id=start(make_user("Support leads")).pk, adapters=container.current())
    assert len(queued(rows)) == 3
    # As if the worker died after the resend but before recording the step.
    JobStep.objects.filter(job=job, key="k-failed-b").update(outcome=JobStep.Outcome.PENDING)
    Job.objects.filter(pk=job.pk).update(state=Job.State.FAILED)
    job_retry(job_id=job.pk, user=None, dispatch=False)
    job = job_run(job_id=job.pk, adapters=container.current())
    assert job.state == Job.State.SUCCEEDED and job.runs == 2
    assert EmailAction.objects.count() == 3
    rows.sqs.purge_queue(QueueUrl=rows.queue_url)
    assert queued(rows) == []


def test_rows_resent_by_an_earlier_job_are_skipped(rows, make_user):
    lead = make_user("Support leads")
    job_run(job_id=start(lead, selections=["FAILED"]).pk, adapters=container.current())
    second = job_run(job_id=start(lead, selections=["FAILED"]).pk, adapters=container.current())
    assert second.result["skipped"] == 2 and second.result["resent"] == 0
    assert EmailAction.objects.count() == 2


def test_pacing_spaces_the_resends(rows, make_user):
    started = time.monotonic()
    job_run(job_id=start(make_user("Support leads"), rate=10).pk, adapters=container.current())
    assert time.monotonic() - started >= 0.2  # three resends, 0.1 s apart at 10 per second


def test_who_may_and_what_is_refused(rows, make_user):
    with pytest.raises(PermissionDenied):
        start(make_user("Support"))
    with pytest.raises(ValueError, match="reason"):
        start(make_user("Support leads", username="lead2"), reason=" ")
    with pytest.raises(ValueError, match="not email addresses: k-failed-a"):
        start(make_user("Support leads", username="lead3"), recipients=["k-failed-a"])
    with pytest.raises(ValueError, match="ends before"):
        bulk_resend.bulk_resend_inputs(
            message_id="m",
            since=moment(10),
            until=moment(0),
            selections=["FAILED"],
            reason="r",
            rate=1,
        )


def test_command_line_twin(rows, make_user):
    import io

    from django.core.management import CommandError, call_command

    make_user("Support leads", username="lee")
    make_user("Support", username="sam")
    common = [
        "--message-id",
        "added-to-team",
        "--since",
        moment(0).isoformat(),
        "--until",
        moment(1000).isoformat(),
        "--reason",
        "outage",
    ]
    with pytest.raises(CommandError, match="sam may not"):
        call_command("bulk_resend", "--as", "sam", *common, stdout=io.StringIO())
    out = io.StringIO()
    call_command("bulk_resend", "--as", "lee", *common, "--rate", "50", stdout=out)
    assert "2 resent, 0 skipped" in out.getvalue()
    job = Job.objects.get()
    assert job.created_by.username == "lee" and job.origin.startswith("cli:")
