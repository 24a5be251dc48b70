"""A Support lead redrives a dead-lettered request in a real browser and watches the job's
progress bar, with a real Celery worker on Redis doing the work."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from tests.celery_worker import celery_worker  # noqa: F401 (a fixture)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("celery_worker"),
]

REASON = "render template [added-to-team]: 'teamName' is undefined"


def test_support_lead_redrives_a_dead_letter_and_watches_it_finish(login, make_user, aws):
    bodies = [
        {"messageId": "added-to-team", "recipients": [{"email": f"{name}@example.com"}]}
        for name in ("kim", "lee", "max")
    ]
    for body in bodies:
        aws.sqs.send_message(
            QueueUrl=aws.dlq_url,
            MessageBody=json.dumps(body),
            MessageAttributes={
                "FailureReason": {"DataType": "String", "StringValue": REASON},
                "EmailOpsState": {"DataType": "String", "StringValue": '{"attempts": 3}'},
            },
        )
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody="not json at all")
    page = login(make_user("Support leads"))
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security" in m.text else 0)
    polls: list[str] = []
    page.on("request", lambda r: polls.append(r.url) if r.url.endswith("/progress/") else 0)

    page.click("text=Operations")
    page.click("#ops-dlq-link")
    assert page.locator("#ops-dlq-never").is_visible()  # viewing the page reads nothing
    page.click("#ops-dlq-read")  # a listing job, on the worker
    page.wait_for_selector("#job-result", timeout=30_000)
    page.click("#job-dlq-link")
    rows = page.locator("tr.ops-dead-letter")
    expect(rows).to_have_count(4)
    kim = rows.filter(has_text="kim@example.com")
    assert REASON in kim.locator(".ops-reason").inner_text()
    assert "not a valid request" in rows.filter(has_text="not json").inner_text()

    for name in ("kim", "lee", "max"):
        rows.filter(has_text=f"{name}@example.com").locator("input[type=checkbox]").check()
    page.fill("#id_rate", "1")  # three messages at one a second: the bar has time to move
    page.click("#ops-redrive-selected")

    assert "started as job" in page.locator(".messagelist").inner_text()
    assert page.locator("#job-progress").get_attribute("data-finished") == "false"
    page.wait_for_selector("#job-result", timeout=30_000)  # the page reloads once it is done
    bar = page.locator("#job-progress-bar")
    assert bar.get_attribute("value") == bar.get_attribute("max") == "3"
    assert page.locator("#job-state").inner_text() == "SUCCEEDED"
    assert "3 message(s) redriven" in page.locator("#job-result").inner_text()
    assert polls and violations == []

    job = Job.objects.get(kind=Job.Kind.DLQ_REDRIVE)
    assert job.created_by.username == "support-leads" and job.state == Job.State.SUCCEEDED
    back = aws.queue_messages(aws.queue_url)
    assert sorted(json.loads(m["Body"])["recipients"][0]["email"] for m in back) == [
        "kim@example.com",
        "lee@example.com",
        "max@example.com",
    ]
    assert all(set(m["MessageAttributes"]) == {"EmailOpsState"} for m in back)
    page.click("text=Operations")
    expect(page.locator("tr.ops-job-row")).to_have_count(2)  # the listing and the redrive
    page.click("#ops-dlq-link")
    expect(page.locator("tr.ops-dead-letter")).to_have_count(1)  # the bad one stays
