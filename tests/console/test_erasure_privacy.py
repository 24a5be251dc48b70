"""Issue 24, findings 1, 2 and 5 (erasure jobs): an erasure stays erased, and neither its job nor
its log holds the address. Through the console's URLs and the real handler and jobs on moto."""

from __future__ import annotations

import json
import logging
import re

import pytest

from emailops import container
from jobs.engine import job_create, job_run
from jobs.models import Job
from templates_admin.jobs.erasure import erasure_inputs
from templates_admin.journal.erasure import recipient_erase

pytestmark = pytest.mark.django_db

BASE = "/admin/templates_admin/operationspage/"
DANA = "dana@example.com"
UNMATCHED = "email-delivery-events-unmatched"


def _erase_through_the_console(client, django_capture_on_commit_callbacks, **extra) -> Job:
    form = {"address": DANA, "confirm": DANA, "reason": "ticket 12"} | extra
    with django_capture_on_commit_callbacks():
        assert client.post(BASE + "erase-recipient/", form).status_code == 302
    job = Job.objects.get(kind=Job.Kind.ERASE_RECIPIENT)
    assert job_run(job_id=job.pk, adapters=container.current()).state == Job.State.SUCCEEDED, (
        job.error
    )
    return Job.objects.get(pk=job.pk)


def test_an_erasure_job_holds_and_logs_no_address(
    aws, client, make_user, django_capture_on_commit_callbacks, caplog
):
    caplog.set_level(logging.INFO)
    client.force_login(make_user("Support leads"))
    job = _erase_through_the_console(client, django_capture_on_commit_callbacks)
    stored = json.dumps([job.inputs, job.result, job.error])
    assert DANA not in stored.lower()
    assert "sealedAddress" not in job.inputs  # kept sealed only until the job succeeded
    assert job.inputs["addressMasked"] == "d***@example.com"
    assert "job.created" in caplog.text and DANA not in caplog.text.lower()


def test_only_support_leads_and_superusers_open_an_erasure_job_and_only_its_creator_sees_the_mask(
    aws, client, make_user, django_capture_on_commit_callbacks
):
    creator = make_user("Support leads")
    client.force_login(creator)
    job = _erase_through_the_console(client, django_capture_on_commit_callbacks)
    page, progress = f"{BASE}job/{job.pk}/", f"{BASE}job/{job.pk}/progress/"
    assert "d***@example.com" in client.get(page).content.decode()
    for group in ("Support", "Template owners"):
        client.force_login(make_user(group))
        assert client.get(page).status_code == 403
        assert client.get(progress).status_code == 403
    client.force_login(make_user("Support leads", username="another-lead"))
    shown = client.get(page)
    assert shown.status_code == 200 and "***@example.com" not in shown.content.decode()
    client.force_login(make_user(superuser=True))
    assert "d***@example.com" in client.get(page).content.decode()


def test_unmatched_events_are_erased_in_every_spelling_of_the_address(aws_events, settings):
    spellings = [DANA, '"dana"@example.com', '"Dana Example" <DANA@Example.com>']
    for i, spelling in enumerate([*spellings, "kim@example.com"]):
        aws_events.dynamodb.put_item(
            TableName=UNMATCHED,
            Item={"Id": {"S": f"evt-{i}"}, "Recipients": {"L": [{"S": spelling}]}},
        )
    assert (
        recipient_erase(adapters=container.current(), address=DANA, actor="t").unmatched_events == 3
    )
    left = aws_events.dynamodb.scan(TableName=UNMATCHED)["Items"]
    assert [item["Id"]["S"] for item in left] == ["evt-3"]


def _open_event(recipient: str) -> str:
    return json.dumps(
        {
            "eventType": "Open",
            "mail": {
                "timestamp": "2026-01-01T00:00:00.000Z",
                "messageId": "ses-late-1",
                "destination": [recipient],
                "commonHeaders": {"to": [recipient]},
            },
            "open": {"timestamp": "2026-01-01T00:00:05.000Z", "ipAddress": "198.51.100.7"},
        }
    )


def test_an_event_landing_after_the_erasure_stores_nothing_personal(aws_events):
    recipient_erase(adapters=container.current(), address=DANA, actor="t")
    handler = container.current().delivery_event_handler
    outcome = handler.handle(_open_event('"Dana Example" <Dana@example.com>'), receive_count=9)
    assert outcome.result == "stored"
    (item,) = aws_events.dynamodb.scan(TableName=UNMATCHED)["Items"]
    assert "dana" not in json.dumps(item).lower()
    assert "a recipient was erased" in item["Reason"]["S"]
    # Someone never erased is stored as before, raw event included.
    handler.handle(_open_event("kim@example.com"), receive_count=9)
    raws = [
        i.get("Raw", {}).get("S", "")
        for i in aws_events.dynamodb.scan(TableName=UNMATCHED)["Items"]
    ]
    assert any("kim@example.com" in raw for raw in raws)


def _dead_letter(aws, recipients: list[str]) -> None:
    body = {"messageId": "added-to-team", "recipients": [{"email": r} for r in recipients]}
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=json.dumps(body))


def _bodies(aws, url: str) -> list[str]:
    messages = aws.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0)
    return [m["Body"] for m in messages.get("Messages", [])]


def test_erasure_rewrites_or_drops_dead_letters_and_a_later_redrive_leaves_the_address_out(
    aws, make_user
):
    _dead_letter(aws, ['"dana"@example.com', "kim@example.com"])
    _dead_letter(aws, ["Dana@Example.com"])
    lead = make_user("Support leads")
    erasure = job_create(
        kind=Job.Kind.ERASE_RECIPIENT,
        inputs=erasure_inputs(adapters=container.current(), address=DANA, reason="ticket 12"),
        user=lead,
        dispatch=False,
    )
    result = job_run(job_id=erasure.pk, adapters=container.current()).result
    assert (result["dead_letters_rewritten"], result["dead_letters_dropped"]) == (1, 1)
    (kept,) = _bodies(aws, aws.dlq_url)
    assert [r["email"] for r in json.loads(kept)["recipients"]] == ["kim@example.com"]

    _dead_letter(aws, [DANA, "lee@example.com"])  # dead-lettered after the erasure
    _dead_letter(aws, [DANA])
    redrive = job_create(
        kind=Job.Kind.DLQ_REDRIVE,
        inputs={"all": True, "ids": [], "rate": 100},
        user=lead,
        dispatch=False,
    )
    outcome = job_run(job_id=redrive.pk, adapters=container.current()).result
    assert (outcome["erasedDropped"], outcome["erasedRewritten"]) == (1, 1)
    redriven = _bodies(aws, aws.queue_url)
    assert len(redriven) == 2 and all("dana" not in body.lower() for body in redriven)


def test_also_suppress_adds_a_suppression_entry(
    aws, client, make_user, django_capture_on_commit_callbacks
):
    client.force_login(make_user("Support leads"))
    job = _erase_through_the_console(client, django_capture_on_commit_callbacks, also_suppress="on")
    assert job.result["suppressed"] is True
    assert "erasure" in container.current().suppression_list.suppression_reason(DANA)


def test_a_new_request_after_the_erasure_is_sent_and_journalled_with_the_address_hashed(
    aws_events,
):
    from emailops.core.ports import TemplateMapping

    built = container.current()
    built.mapping_store.save_mapping(
        TemplateMapping("added-to-team", "added-to-team.html", "Welcome, {{.name}}"),
        expected_version=None,
    )
    built.template_store.write_template("default/added-to-team.html", "<p>{{.name}}</p>")
    recipient_erase(adapters=container.current(), address=DANA, actor="t")
    request = {
        "messageId": "added-to-team",
        "recipients": [{"email": '"Dana"@Example.com'}],
        "context": {"name": "Dana Example"},
    }
    outcome = built.build_pipeline(lease_seconds=30).process(json.dumps(request))
    assert outcome.sent == 1  # the default: erasure does not stop mail (also-suppress does)
    assert aws_events.sent_emails()[-1].destinations["ToAddresses"] == ['"Dana"@Example.com']
    (row,) = aws_events.dynamodb.scan(TableName="email-journal")["Items"]
    assert row["Recipient"]["S"].startswith("erased:")
    assert "dana" not in json.dumps(row).lower()

    # Its bounce comes back tagged with the row's key: applied, with nothing personal kept.
    from emailops.core.delivery_events import JOURNAL_KEY_TAG, encode_journal_key

    bounce = {
        "eventType": "Bounce",
        "mail": {
            "timestamp": "2026-01-01T00:00:00.000Z",
            "messageId": row["SesMessageId"]["S"],
            "destination": ['"Dana"@Example.com'],
            "tags": {JOURNAL_KEY_TAG: [encode_journal_key(row["Id"]["S"])]},
        },
        "bounce": {
            "timestamp": "2026-01-01T00:00:05.000Z",
            "bounceType": "Transient",
            "bounceSubType": "General",
            "bouncedRecipients": [
                {
                    "emailAddress": "dana@example.com",
                    "diagnosticCode": "452 <dana@example.com> full",
                }
            ],
        },
    }
    assert built.delivery_event_handler.handle(json.dumps(bounce)).result == "applied"
    (row,) = aws_events.dynamodb.scan(TableName="email-journal")["Items"]
    assert row["DeliveryStatus"]["S"] == "BOUNCED"
    assert "dana" not in json.dumps(row).lower()


def test_a_console_resend_to_an_erased_address_is_refused(aws, client, make_user):
    from django.urls import reverse

    from templates_admin.models import EmailAction
    from tests.journal_factory import BASE_TIME, journal_row, put_rows

    recipient_erase(adapters=container.current(), address=DANA, actor="t")
    # A row naming her in clear after the erasure: the Go consumer, still running, wrote it.
    row = journal_row("Dana@Example.com", at=BASE_TIME, go_row=True)
    put_rows(aws.dynamodb, "email-journal", [row])
    client.force_login(make_user("Support leads"))
    url = reverse("admin:templates_admin_journal_detail", args=[row["Id"]]) + "resend/"
    dedupe_id = re.search(r'name="dedupe_id" value="([^"]+)"', client.get(url).content.decode())
    refused = client.post(url, {"reason": "she never got it", "dedupe_id": dedupe_id.group(1)})
    assert "recipient was erased" in refused.content.decode()
    assert not EmailAction.objects.exists()
    assert aws.queue_messages(aws.queue_url) == []


def test_the_migration_takes_the_address_out_of_finished_erasure_jobs(db):
    from importlib import import_module

    from django.db import connection
    from django.db.migrations.loader import MigrationLoader

    legacy = Job.objects.create(
        kind=Job.Kind.ERASE_RECIPIENT,
        state=Job.State.SUCCEEDED,
        inputs={"address": "Dana@Example.com", "reason": "ticket 1"},
        result={"address": "Dana@Example.com", "journal_rows": 1, "lines": ["removed 1"]},
    )
    name = "0011_erasure_jobs_without_addresses"
    migration = import_module(f"templates_admin.migrations.{name}")
    # The models as they were then (the jobs were the console app's; the table is the same).
    then = MigrationLoader(connection).project_state(("templates_admin", name)).apps
    migration.forwards(then, None)
    legacy.refresh_from_db()
    assert "dana" not in json.dumps([legacy.inputs, legacy.result]).lower()
    assert legacy.inputs["addressMasked"] == "d***@example.com"


def test_erasure_takes_the_address_out_of_other_jobs(aws, make_user):
    from jobs.models import JobStep

    listing = Job.objects.create(
        kind=Job.Kind.DLQ_LIST,
        state=Job.State.SUCCEEDED,
        result={"messages": [{"request": {"recipients": ['"dana"@example.com', "kim@x.org"]}}]},
    )
    resend = Job.objects.create(
        kind=Job.Kind.BULK_RESEND, inputs={"recipients": ["Dana@Example.com"], "reason": "r"}
    )
    JobStep.objects.create(job=resend, key="d1:Dana@Example.com", detail={"to": DANA})
    lead = make_user("Support leads")
    erasure = job_create(
        kind=Job.Kind.ERASE_RECIPIENT,
        inputs=erasure_inputs(adapters=container.current(), address=DANA, reason="ticket 12"),
        user=lead,
        dispatch=False,
    )
    assert job_run(job_id=erasure.pk, adapters=container.current()).result["jobs_scrubbed"] == 2
    stored = json.dumps(
        [[j.inputs, j.result] for j in Job.objects.all()]
        + [[s.key, s.detail] for s in JobStep.objects.all()]
    )
    assert "dana" not in stored.lower() and "kim@x.org" in stored
    assert listing.pk and "erased:" in stored
