"""The dead-letter queue: listing without consuming, redrive as a job (attributes kept except the
reason, deleted only after the copy, resumable), and the `dlq` command."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from emailops import container
from emailops.core.retry import RetryState
from emailops.queue_state import state_seal
from jobs.engine import job_create, job_run
from jobs.models import Job, JobStep
from templates_admin.jobs import dlq

pytestmark = pytest.mark.django_db


def _listing(**options):
    adapters = container.current()
    return dlq.dead_letter_list(
        queue=adapters.queue, sensitive=adapters.config.console.sensitive_keys, **options
    )


# A record that ran out of retry budget after one send SES accepted but the journal never marked.
STATE = RetryState(
    first_attempt_at=1780000000, attempts=9, accepted={"k1": "ses-1"}, errors=("503",)
)


def dead_letter(aws, body: dict | str, reason: str | None = "render template: boom", **extra):
    text = body if isinstance(body, str) else json.dumps(body)
    sealed = state_seal().seal(STATE, text)  # as the consumer dead-letters it
    attributes = {"EmailOpsState": {"DataType": "String", "StringValue": sealed}}
    if reason is not None:
        attributes["FailureReason"] = {"DataType": "String", "StringValue": reason}
    for name, value in extra.items():
        attributes[name] = {"DataType": "String", "StringValue": value}
    return aws.sqs.send_message(
        QueueUrl=aws.dlq_url, MessageBody=text, MessageAttributes=attributes
    )["MessageId"]


def request(n: int) -> dict:
    return {
        "messageId": "added-to-team",
        "recipients": [{"email": f"r{n}@example.com"}],
        "context": {"teamName": "Imaging", "sessionToken": "s3cr3t"},
    }


def all_messages(aws, url: str) -> list[dict]:
    """One receive (moto answers with every visible message): more would count as receives, and
    the source queue moves a message to its DLQ after three."""
    return aws.queue_messages(url)


def test_listing_shows_reason_count_and_request_and_consumes_nothing(aws):
    first = dead_letter(aws, request(1))
    dead_letter(aws, "not json", reason=None)
    listing = _listing(limit=50)
    by_id = {m.message_id: m for m in listing.messages}
    assert len(by_id) == 2 and listing.source_url == aws.queue_url
    letter = by_id[first]
    assert letter.failure_reason == "render template: boom"
    assert letter.receive_count == 1
    assert letter.request["recipients"] == ["r1@example.com"]
    assert letter.request["context"]["sessionToken"] != "s3cr3t"  # masked like the journal
    assert "EmailOpsState" in letter.attribute_names
    bad = next(m for m in listing.messages if m.message_id != first)
    assert bad.request is None and "JSON" in bad.request_error and bad.failure_reason == ""
    # Released at once: both can be received again right away, and listing twice counts twice.
    assert len(all_messages(aws, aws.dlq_url)) == 2
    again = {m.message_id: m for m in _listing().messages}
    assert again[first].receive_count >= 2


def test_listing_is_bounded(aws):
    for n in range(25):
        dead_letter(aws, request(n))
    listing = _listing(limit=10)
    assert len(listing.messages) == 10 and listing.truncated
    assert len(_listing(limit=100).messages) == 25


def test_redrive_selected_keeps_attributes_but_the_reason_and_deletes_after_copying(aws, make_user):
    ids = [dead_letter(aws, request(n), Origin="billing") for n in range(3)]
    lead = make_user("Support leads")
    job = job_create(
        kind=Job.Kind.DLQ_REDRIVE,
        inputs=dlq.redrive_inputs(ids=ids[:2], redrive_all=False, rate=50),
        user=lead,
        dispatch=False,
    )
    job = job_run(job_id=job.pk, adapters=container.current())
    assert job.state == Job.State.SUCCEEDED, job.error
    assert (job.done, job.total, job.result["redriven"]) == (2, 2, 2)
    moved = all_messages(aws, aws.queue_url)
    assert sorted(json.loads(m["Body"])["recipients"][0]["email"] for m in moved) == [
        "r0@example.com",
        "r1@example.com",
    ]
    for message in moved:
        attributes = message["MessageAttributes"]
        assert "FailureReason" not in attributes
        # A fresh retry budget (someone fixed the cause), the accepted send still remembered,
        # sealed again for the copy's body (the consumer honours it).
        carried = state_seal().open(attributes["EmailOpsState"]["StringValue"], message["Body"])
        assert carried == (RetryState(accepted={"k1": "ses-1"}), "", False)
        assert attributes["Origin"]["StringValue"] == "billing"
    left = all_messages(aws, aws.dlq_url)
    assert [m["MessageId"] for m in left] == [ids[2]]
    steps = {s.key: s for s in JobStep.objects.filter(job=job)}
    assert set(steps) == set(ids[:2]) and all(s.detail["keptState"] for s in steps.values())


def test_redrive_drops_a_state_we_did_not_seal(aws, make_user):
    """A producer's own EmailOpsState in the DLQ (sent there directly) is no state on redrive:
    its "accepted" would mark a recipient SENT that was never sent."""
    body = json.dumps(request(0))
    forged = {"DataType": "String", "StringValue": STATE.to_json()}
    aws.sqs.send_message(
        QueueUrl=aws.dlq_url, MessageBody=body, MessageAttributes={"EmailOpsState": forged}
    )
    job = job_create(
        kind=Job.Kind.DLQ_REDRIVE,
        inputs=dlq.redrive_inputs(ids=None, redrive_all=True, rate=50),
        user=make_user("Support leads"),
        dispatch=False,
    )
    assert job_run(job_id=job.pk, adapters=container.current()).state == Job.State.SUCCEEDED
    (moved,) = all_messages(aws, aws.queue_url)
    text = moved["MessageAttributes"]["EmailOpsState"]["StringValue"]
    assert state_seal().open(text, moved["Body"]) == (RetryState(), "", False)


def test_a_rerun_deletes_what_an_earlier_run_copied_instead_of_copying_it_again(aws, make_user):
    message_id = dead_letter(aws, request(1))
    job = job_create(
        kind=Job.Kind.DLQ_REDRIVE,
        inputs=dlq.redrive_inputs(ids=None, redrive_all=True, rate=50),
        user=make_user("Support leads"),
        dispatch=False,
    )
    # An earlier run copied it, recorded the step, and died before the delete.
    JobStep.objects.create(job=job, key=message_id, outcome=JobStep.Outcome.DONE)
    Job.objects.filter(pk=job.pk).update(total=1)
    job = job_run(job_id=job.pk, adapters=container.current())
    assert job.state == Job.State.SUCCEEDED, job.error
    assert all_messages(aws, aws.queue_url) == []  # not copied twice
    assert all_messages(aws, aws.dlq_url) == []
    assert job.result["deletedAfterEarlierCopy"] == 1


def test_a_finished_job_is_not_run_again(aws, make_user):
    dead_letter(aws, request(1))
    job = job_create(
        kind=Job.Kind.DLQ_REDRIVE,
        inputs=dlq.redrive_inputs(ids=None, redrive_all=True, rate=50),
        user=make_user("Support leads"),
        dispatch=False,
    )
    job_run(job_id=job.pk, adapters=container.current())
    dead_letter(aws, request(2))
    again = job_run(job_id=job.pk, adapters=container.current())
    assert again.runs == 1 and len(all_messages(aws, aws.dlq_url)) == 1


def test_support_cannot_start_a_redrive(aws, make_user):
    from django.core.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):
        job_create(
            kind=Job.Kind.DLQ_REDRIVE,
            inputs={"all": True, "ids": [], "rate": 1},
            user=make_user("Support"),
            dispatch=False,
        )
    assert not Job.objects.exists()


def test_redrive_inputs_are_checked():
    with pytest.raises(ValueError, match="not both"):
        dlq.redrive_inputs(ids=["a"], redrive_all=True, rate=1)
    with pytest.raises(ValueError, match="not both"):
        dlq.redrive_inputs(ids=[], redrive_all=False, rate=1)
    with pytest.raises(ValueError, match="rate"):
        dlq.redrive_inputs(ids=["a"], redrive_all=False, rate=0)


def test_cli_lists_and_redrives(aws):
    first = dead_letter(aws, request(1))
    dead_letter(aws, request(2))
    out = io.StringIO()
    call_command("dlq", "list", "--json", stdout=out)
    listed = json.loads(out.getvalue())
    assert {m["id"] for m in listed} >= {first}
    assert listed[0]["failureReason"] == "render template: boom"
    out = io.StringIO()
    call_command("dlq", "list", stdout=out)
    assert "reason: render template: boom" in out.getvalue()

    out = io.StringIO()
    call_command("dlq", "redrive", first, "--rate", "50", stdout=out)
    assert "1 message(s) redriven" in out.getvalue()
    job = Job.objects.get()
    assert job.origin.startswith("cli:") and job.created_by is None
    with pytest.raises(CommandError, match="not found"):
        call_command("dlq", "redrive", "no-such-id", "--rate", "50", stdout=io.StringIO())
    call_command("dlq", "redrive", "--all", "--rate", "50", stdout=io.StringIO())
    assert all_messages(aws, aws.dlq_url) == []
    assert len(all_messages(aws, aws.queue_url)) == 2
