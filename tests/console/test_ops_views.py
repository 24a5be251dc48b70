"""Operations pages through Django's test client: who sees and starts what, the job page with its
progress endpoint and policy, and the index banner. Jobs are dispatched on commit; here the
on-commit hook is captured and the job run in-process (tests/worker/test_jobs_worker.py runs
them on a real worker)."""

from __future__ import annotations

import json
from html import unescape

import pytest

from emailops import container
from jobs.engine import job_run
from jobs.models import Job
from monitoring import checks as monitoring
from templates_admin.csp import POLICY, POLLING_POLICY

pytestmark = pytest.mark.django_db

BASE = "/admin/templates_admin/operationspage/"


def text(response) -> str:
    return unescape(response.content.decode())


def dead_letter(aws, reason: str = "render template [added-to-team]: boom") -> str:
    return aws.sqs.send_message(
        QueueUrl=aws.dlq_url,
        MessageBody=json.dumps(
            {"messageId": "added-to-team", "recipients": [{"email": "kim@example.com"}]}
        ),
        MessageAttributes={"FailureReason": {"DataType": "String", "StringValue": reason}},
    )["MessageId"]


def read_queue(client) -> Job:
    """Press "Read the queue now" and run the listing job it starts."""
    response = client.post(BASE + "dlq/", {"read": "1"})
    job = Job.objects.filter(kind="dlq_list").first()
    assert response.status_code == 302 and response["Location"] == f"{BASE}job/{job.pk}/"
    job_run(job_id=job.pk, adapters=container.current())
    job.refresh_from_db()
    return job


def receive_counts(aws) -> list[int]:
    messages = aws.sqs.receive_message(
        QueueUrl=aws.dlq_url, MaxNumberOfMessages=10, AttributeNames=["ApproximateReceiveCount"]
    )["Messages"]
    aws.sqs.change_message_visibility_batch(
        QueueUrl=aws.dlq_url,
        Entries=[
            {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}
            for n, m in enumerate(messages)
        ],
    )
    return sorted(int(m["Attributes"]["ApproximateReceiveCount"]) for m in messages)


def test_viewing_the_dead_letter_page_never_receives_from_the_queue(aws, client, make_user):
    """The finding: every GET received the messages, hiding them for 20 s and raising their
    receive count."""
    dead_letter(aws)
    client.force_login(make_user("Support"))
    for _ in range(3):
        page = client.get(BASE + "dlq/")
        assert page.status_code == 200 and "not been read yet" in text(page)
    assert receive_counts(aws) == [1]  # only this test's own look
    job = read_queue(client)  # Support may read it: a job, on purpose, recorded
    assert job.created_by.username == "support" and job.result["listed"] == 1
    for _ in range(3):
        assert "kim@example.com" in text(client.get(BASE + "dlq/"))
    assert receive_counts(aws) == [3]  # our look, the job's, ours again: no page view counted
    done = text(client.get(f"{BASE}job/{job.pk}/"))
    assert "1</strong> message(s) read" in done and f"{BASE}dlq/" in done


def test_the_listing_masks_contexts_and_bodies_as_the_journal_does(aws, client, make_user):
    aws.sqs.send_message(
        QueueUrl=aws.dlq_url,
        MessageBody=json.dumps(
            {
                "messageId": "password-reset",
                "recipients": [{"email": "kim@example.com"}],
                "context": {"resetToken": "tok-SECRET-1", "name": "Kim"},
            }
        ),
    )
    aws.sqs.send_message(  # not a valid request (no recipients), but JSON with a secret
        QueueUrl=aws.dlq_url,
        MessageBody=json.dumps({"messageId": "x", "context": {"password": "pw-SECRET-2"}}),
    )
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody="reset link: https://x/SECRET-3")
    client.force_login(make_user("Support leads"))
    job = read_queue(client)
    page = text(client.get(BASE + "dlq/"))
    stored = json.dumps(Job.objects.get(pk=job.pk).result)
    for secret in ("SECRET-1", "SECRET-2", "SECRET-3"):
        assert secret not in page and secret not in stored
    assert "Kim" in page and "not a valid request" in page and "not JSON" in page


def test_who_sees_which_pages(aws, client, make_user):
    client.force_login(make_user("Support"))
    index = client.get(BASE)
    assert index.status_code == 200 and "Dead-letter queue" in text(index)
    assert "Bulk resend" not in text(index) and "Template check" not in text(index)
    assert client.get(BASE + "bulk-resend/").status_code == 403
    assert client.get(BASE + "template-check/").status_code == 403
    dlq_page = client.get(BASE + "dlq/")
    assert dlq_page.status_code == 200 and "Redrive selected" not in text(dlq_page)
    assert client.post(BASE + "dlq/", {"redrive_all": "on", "rate": "5"}).status_code == 403
    assert not Job.objects.exists()
    client.force_login(make_user(None))  # staff without a group
    assert client.get(BASE).status_code == 403


def test_a_lead_redrives_from_the_page_and_follows_the_job(
    aws, client, make_user, django_capture_on_commit_callbacks
):
    message_id = dead_letter(aws)
    client.force_login(make_user("Support leads"))
    read_queue(client)
    page = client.get(BASE + "dlq/")
    assert page["Content-Security-Policy"] == POLICY
    assert "render template [added-to-team]: boom" in text(page) and message_id in text(page)
    Job.objects.all().delete()
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(BASE + "dlq/", {"ids": [message_id], "rate": "10"})
    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == f"{BASE}job/{job.pk}/"
    assert len(callbacks) == 1  # the dispatch to a worker, once the job is committed
    assert (job.kind, job.inputs["ids"], job.created_by.username) == (
        "dlq_redrive",
        [message_id],
        "support-leads",
    )

    pending = client.get(f"{BASE}job/{job.pk}/")
    assert pending["Content-Security-Policy"] == POLLING_POLICY
    assert "connect-src 'self'" in POLLING_POLICY and "script-src 'self'" in POLLING_POLICY
    assert "templates_admin/ops.js" in text(pending) and 'data-finished="false"' in text(pending)
    progress = client.get(f"{BASE}job/{job.pk}/progress/").json()
    assert progress == {
        "id": job.pk,
        "state": "PENDING",
        "done": 0,
        "total": None,
        "finished": False,
        "text": "waiting for a worker",
    }
    job_run(job_id=job.pk, adapters=container.current())
    progress = client.get(f"{BASE}job/{job.pk}/progress/").json()
    assert (progress["state"], progress["done"], progress["total"]) == ("SUCCEEDED", 1, 1)
    done = text(client.get(f"{BASE}job/{job.pk}/"))
    assert "1</strong> message(s) redriven" in done and 'data-finished="true"' in done
    assert "support-leads" in text(client.get(BASE))
    # The listing leaves out what was redriven since it was read.
    assert message_id not in text(client.get(BASE + "dlq/"))


def test_redrive_form_errors_are_shown(aws, client, make_user):
    dead_letter(aws)
    client.force_login(make_user("Support leads"))
    read_queue(client)
    response = client.post(BASE + "dlq/", {"rate": "5"})
    assert response.status_code == 400 and "choose the messages" in text(response)


def test_bulk_resend_form_starts_a_job(aws, client, make_user):
    client.force_login(make_user("Support leads"))
    assert client.get(BASE + "bulk-resend/").status_code == 200
    response = client.post(
        BASE + "bulk-resend/",
        {
            "message_id": "added-to-team",
            "since": "2026-11-01T00:00",
            "until": "2026-11-02T00:00",
            "selections": ["FAILED"],
            "recipients": "a@example.com\nb@example.com",
            "reason": "the outage",
            "rate": "5",
        },
    )
    job = Job.objects.get()
    assert response.status_code == 302 and job.kind == "bulk_resend"
    assert job.inputs["recipients"] == ["a@example.com", "b@example.com"]
    missing_reason = client.post(
        BASE + "bulk-resend/",
        {
            "message_id": "m",
            "since": "2026-11-01T00:00",
            "until": "2026-11-02T00:00",
            "selections": ["FAILED"],
            "rate": "5",
        },
    )
    assert missing_reason.status_code == 400 and Job.objects.count() == 1


def test_template_owner_starts_a_check_and_sees_the_report(aws, client, make_user):
    aws.load_samples()
    client.force_login(make_user("Template owners"))
    response = client.post(BASE + "template-check/")
    job = Job.objects.get()
    job_run(job_id=job.pk, adapters=container.current())
    page = text(client.get(response["Location"]))
    assert (
        "7</strong> render(s)" in page and "custom/O367/dataset-publication-accepted.html" in page
    )


def test_index_banner_after_beat_found_dead_letters(aws, client, make_user):
    client.force_login(make_user("Support"))
    assert "ops-banner" not in text(client.get("/admin/"))
    dead_letter(aws)
    monitoring.dead_letter_depth_check(queue=container.current().queue)
    index = text(client.get("/admin/"))
    assert "1 request on the dead-letter queue" in index and f"{BASE}dlq/" in index
    client.force_login(make_user(None))
    assert "ops-banner" not in text(client.get("/admin/"))


def test_a_bulk_resend_result_links_each_new_row(client, make_user):
    from jobs.models import JobStep

    lead = make_user("Support leads")
    job = Job.objects.create(
        kind=Job.Kind.BULK_RESEND,
        state=Job.State.SUCCEEDED,
        inputs={"message_id": "added-to-team"},
        created_by=lead,
        total=1,
        done=1,
        result={
            "selection": {"matched": 1, "partial": True},
            "resent": 1,
            "skipped": 0,
            "failed": 0,
        },
    )
    JobStep.objects.create(
        job=job, key="old/key", outcome="done", detail={"journal_key": "new:key", "action": 7}
    )
    client.force_login(lead)
    page = text(client.get(f"{BASE}job/{job.pk}/"))
    assert "1</strong> resent" in page and "stopped at its read bound" in page
    assert "/admin/templates_admin/emailjournalpage/entry/new%3Akey/" in page
    assert "Resume this job" not in page


def test_a_lead_erases_a_recipient_with_a_reason_and_sees_what_went(
    aws, client, make_user, django_capture_on_commit_callbacks
):
    from tests.journal_factory import BASE_TIME, journal_row, put_rows

    rows = [
        journal_row("pat@example.com", at=BASE_TIME),
        journal_row("pat@example.com", at=BASE_TIME + 1, go_row=True),
        journal_row("kim@example.com", at=BASE_TIME + 2),
    ]
    put_rows(aws.dynamodb, "email-journal", rows)
    client.force_login(make_user("Support"))
    assert client.get(BASE + "erase-recipient/").status_code == 403
    client.force_login(make_user("Support leads"))
    form = {"address": "pat@example.com", "confirm": "pat@example.com", "reason": ""}
    assert client.post(BASE + "erase-recipient/", form).status_code == 400  # no reason
    mismatch = form | {"confirm": "pam@example.com", "reason": "ticket 7"}
    assert client.post(BASE + "erase-recipient/", mismatch).status_code == 400
    assert not Job.objects.exists()

    with django_capture_on_commit_callbacks() as callbacks:
        started = client.post(BASE + "erase-recipient/", form | {"reason": "ticket 7"})
    assert started.status_code == 302 and len(callbacks) == 1
    job = Job.objects.get()
    assert job.inputs["addressMasked"] == "p***@example.com"
    assert job.inputs["reason"] == "ticket 7"
    assert "pat@example.com" not in str(job.inputs)  # a hash, a masked form, the sealed address
    assert job.created_by.username == "support-leads"
    assert job_run(job_id=job.pk, adapters=container.current()).state == Job.State.SUCCEEDED

    page = text(client.get(started["Location"]))
    assert "removed 1 journal row(s) written by emailops" in page
    assert "removed 1 journal row(s) written by the Go consumer" in page
    left = aws.dynamodb.scan(TableName="email-journal")["Items"]
    assert [item["Id"]["S"] for item in left] == [rows[2]["Id"]]
