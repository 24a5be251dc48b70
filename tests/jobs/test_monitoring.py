"""Celery beat's checks: dead-letter depth, stuck claims (bounded Scan), the daily template check."""

from __future__ import annotations

import logging

import pytest

from emailops import container
from jobs.models import Job
from monitoring import checks as monitoring
from templates_admin.jobs.template_check import template_check_daily
from tests.journal_factory import BASE_TIME, journal_row, put_rows, queue_visibility

pytestmark = pytest.mark.django_db


def test_dead_letter_depth_is_stored_and_logged_as_an_error(aws, caplog):
    caplog.set_level(logging.INFO, logger="templates_admin")
    assert monitoring.dead_letter_depth_check(queue=container.current().queue)["depth"] == 0
    assert monitoring.reading(monitoring.DLQ_DEPTH).value["depth"] == 0
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody="{}")
    assert monitoring.dead_letter_depth_check(queue=container.current().queue)["depth"] == 1
    assert monitoring.reading(monitoring.DLQ_DEPTH).value["depth"] == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("event=dlq.not_empty depth=1" in e for e in errors)


def test_a_non_empty_dead_letter_queue_is_reported_once_per_change(aws, caplog):
    caplog.set_level(logging.INFO, logger="templates_admin")

    def reports() -> list[str]:
        return [r.getMessage() for r in caplog.records if "dlq." in r.getMessage()]

    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody="{}")
    for _minute in range(3):  # beat's every-minute check, three times over the same depth
        monitoring.dead_letter_depth_check(queue=container.current().queue)
    assert len([r for r in reports() if "dlq.not_empty" in r]) == 1
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody="{}")
    monitoring.dead_letter_depth_check(queue=container.current().queue)
    monitoring.dead_letter_depth_check(queue=container.current().queue)
    assert [r for r in reports() if "dlq.not_empty" in r][-1].count("depth=2") == 1
    assert len([r for r in reports() if "dlq.not_empty" in r]) == 2
    aws.sqs.purge_queue(QueueUrl=aws.dlq_url)
    monitoring.dead_letter_depth_check(queue=container.current().queue)
    assert "event=dlq.empty" in reports()[-1]


def test_stuck_claims_are_found_and_the_scan_resumes_where_it_stopped(aws, settings, caplog):
    now = BASE_TIME + 1000
    put_rows(
        aws.dynamodb,
        "email-journal",
        [
            journal_row("a@example.com", at=BASE_TIME, key="stuck", status="QUEUED"),
            journal_row(
                "b@example.com", at=BASE_TIME, key="live", status="QUEUED", ClaimExpiresAt=now + 60
            ),
            journal_row(
                "c@example.com", at=BASE_TIME, key="go-stuck", status="QUEUED", go_row=True
            ),
            journal_row("d@example.com", at=now - 5, key="go-live", status="QUEUED", go_row=True),
            *[journal_row(f"s{i}@example.com", at=BASE_TIME + i) for i in range(20)],
        ],
    )
    settings.CLAIM_LEASE_SECONDS = 30
    value = monitoring.stuck_claims_check(adapters=container.current(), now=now)
    assert sorted(r["key"] for r in value["rows"]) == ["go-stuck", "stuck"]
    assert value["next_key"] is None and value["read"] == 24
    assert any("event=journal.stuck_claim key=stuck" in r.getMessage() for r in caplog.records)

    settings.OPS_SCAN_MAX_ITEMS = 10  # a bounded run stops, and the next one resumes
    found, reads = set(), 0
    for _ in range(3):
        value = monitoring.stuck_claims_check(adapters=container.current(), now=now)
        found |= {r["key"] for r in value["rows"]}
        reads += value["read"]
        assert value["read"] <= 10
    assert found == {"go-stuck", "stuck"} and reads == 24 and value["next_key"] is None


def test_daily_template_check_records_a_system_job(aws, caplog):
    aws.load_samples()
    job = template_check_daily(adapters=container.current())
    assert job.state == Job.State.SUCCEEDED and job.origin == "beat" and job.created_by is None

    container.current().template_store.write_template("default/added-to-team.html", "{% if %}")
    job = template_check_daily(adapters=container.current())
    assert job.result["errors"] == 1
    assert any("event=templates.check_failed" in r.getMessage() for r in caplog.records)


def test_the_check_applies_the_consumers_lease_the_queues_visibility_timeout(aws, settings):
    """A Go row (no ClaimExpiresAt) is stuck here exactly when the consumer would take it over:
    its Timestamp plus the queue's visibility timeout, while CLAIM_LEASE_SECONDS is 0."""
    settings.CLAIM_LEASE_SECONDS = 0
    lease = queue_visibility(aws)
    now = BASE_TIME + 1000
    put_rows(
        aws.dynamodb,
        "email-journal",
        [
            journal_row(
                "c@example.com", at=BASE_TIME, key="go-stuck", status="QUEUED", go_row=True
            ),
            journal_row(
                "d@example.com", at=now - lease, key="go-live", status="QUEUED", go_row=True
            ),
        ],
    )

    value = monitoring.stuck_claims_check(adapters=container.current(), now=now)

    assert [r["key"] for r in value["rows"]] == ["go-stuck"]  # go-live's lease ends right now
    assert value["rows"][0]["leaseEndedAt"] == BASE_TIME + lease
