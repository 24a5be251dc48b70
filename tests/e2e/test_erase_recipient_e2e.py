"""End to end: `manage.py erase_recipient` against moto server removes every row of one address,
its Go-era rows, unmatched events and API read-audit entries included, keeps its suppression
entry, and leaves every other address's rows alone."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from tests.support.stack import wait_until

pytestmark = pytest.mark.e2e

UNMATCHED = "email-delivery-events-unmatched"
SUPPRESSION = "email-suppression"


@pytest.fixture(scope="module")
def e2e_stack_options() -> dict:
    """The events resources too: the unmatched-events table is one of the things erased."""
    return {
        "bucket": "emailops-erase-e2e",
        "events_queue": "email-ses-events-erase",
        # INFO: the logs are searched for the erased address too; a retried event waits 1 s.
        "extra_env": {
            "SES_EVENTS_VERIFY_SIGNATURES": "false",
            "LOG_LEVEL": "INFO",
            "RETRY_BACKOFF_BASE_SECONDS": "1",
        },
    }


@pytest.fixture
def db_env(tmp_path, e2e_stack) -> dict[str, str]:
    return e2e_stack.console_database(tmp_path / "console.sqlite3")


def _go_row(stack, key: str, recipient: str, at: int) -> None:
    # As the Go consumer wrote it: no RecipientKey, no ClaimExpiresAt.
    stack.put_row(
        Id=key,
        MessageId="added-to-team",
        Recipient=recipient,
        Status="SENT",
        Timestamp=at,
        SentAtKey=f"{at:020d}",
        SesMessageId=f"go-{key}",
    )


def _unmatched(stack, event_id: str, recipient: str) -> None:
    stack.dynamodb.put_item(
        TableName=UNMATCHED,
        Item={
            "Id": {"S": event_id},
            "EventType": {"S": "Bounce"},
            "Recipients": {"L": [{"S": recipient}]},
        },
    )


def test_erase_recipient_removes_every_row_of_one_address_and_nothing_else(e2e_stack, db_env):
    stack = e2e_stack
    for email in ("Pat@Example.com", "other@example.com"):
        stack.enqueue(
            [
                {
                    "messageId": "added-to-team",
                    "dedupeId": f"erase-{email.lower()}",
                    "recipients": [{"email": email}],
                    "context": {"teamName": "Ops", "administrator": "Ann"},
                }
            ]
        )
    stack.consume()
    new_pat, new_other = (
        "erase-pat@example.com:Pat@Example.com",
        "erase-other@example.com:other@example.com",
    )
    assert stack.row(new_pat)["Status"] == stack.row(new_other)["Status"] == "SENT"
    now = int(time.time()) - 86400 * 30
    _go_row(stack, "go-1:pat@example.com", "pat@example.com", now)
    _go_row(stack, "go-2:Pat@Example.com", "Pat@Example.com", now + 1)
    _go_row(stack, "go-3:other@example.com", "other@example.com", now + 2)
    _unmatched(stack, "evt-pat", "PAT@example.com")
    _unmatched(stack, "evt-other", "other@example.com")
    stack.dynamodb.put_item(
        TableName=SUPPRESSION,
        Item={"Email": {"S": "pat@example.com"}, "Reason": {"S": "manual"}},
    )
    stack.manage(
        "shell",
        "-c",
        "from audit.models import JournalReadAudit as A; "
        "A.objects.create(channel='api', action='get', actor='t', query='api:1:x:pat@example.com'); "
        "A.objects.create(channel='api', action='get', actor='t', query='api:1:x:other@example.com')",
        env=db_env,
    )

    erased = stack.manage("erase_recipient", "Pat@Example.com", "--yes", env=db_env).stdout

    assert "removed 1 journal row(s) written by emailops" in erased
    assert "removed 2 journal row(s) written by the Go consumer" in erased
    assert "removed 1 unmatched delivery event(s)" in erased
    assert "removed 1 API read-audit entry(ies)" in erased
    assert "kept its suppression entry" in erased
    statuses = stack.journal_statuses()
    assert not {new_pat, "go-1:pat@example.com", "go-2:Pat@Example.com"} & set(statuses)
    assert {new_other, "go-3:other@example.com"} <= set(statuses)
    assert stack.item(UNMATCHED, {"Id": "evt-pat"}) is None
    assert stack.item(UNMATCHED, {"Id": "evt-other"}) is not None
    assert stack.item(SUPPRESSION, {"Email": "pat@example.com"}) is not None
    left = stack.manage(
        "shell",
        "-c",
        "from audit.models import JournalReadAudit as A; from jobs.models import Job; "
        "print(sorted(A.objects.values_list('query', flat=True))); "
        "j = Job.objects.get(); print(j.kind, j.state, j.origin.startswith('cli:'), j.inputs['addressMasked'])",
        env=db_env,
    ).stdout
    assert "['api:1:x:other@example.com']" in left
    assert "erase_recipient SUCCEEDED True p***@example.com" in left

    again = stack.manage("erase_recipient", "pat@example.com", "--yes", env=db_env).stdout
    assert "removed 0 journal row(s) written by emailops" in again  # safe to repeat


def _late_event(ses_id: str, key: str, event_type: str = "Open") -> str:
    """An SES event as the local simulator sends it for a named recipient: the display-name form
    in ``mail.destination`` (an Open's recipients), the journal key in the tag, the raw headers."""
    from emailops.core.delivery_events import JOURNAL_KEY_TAG, encode_journal_key

    named = '"Dana Example" <dana@example.com>'
    return json.dumps(
        {
            "eventType": event_type,
            "mail": {
                "timestamp": "2026-01-01T00:00:00.000Z",
                "messageId": ses_id,
                "destination": [named],
                "tags": {JOURNAL_KEY_TAG: [encode_journal_key(key)]},
                "commonHeaders": {"to": [named]},
            },
            "open": {
                "timestamp": "2026-01-01T00:00:05.000Z",
                "ipAddress": "198.51.100.7",
                "userAgent": "Mail/1.0",
            },
        }
    )


def _dead_letter(stack, recipients: list[str]) -> None:
    body = {
        "messageId": "added-to-team",
        "dedupeId": f"dl-{uuid.uuid4().hex[:8]}",
        "recipients": [{"email": r} for r in recipients],
        "context": {"teamName": "Ops", "administrator": "Ann"},
    }
    stack.sqs.send_message(QueueUrl=stack.direct(stack.dlq_url), MessageBody=json.dumps(body))


def _visible(stack) -> int:
    attributes = stack.sqs.get_queue_attributes(
        QueueUrl=stack.direct(stack.events_queue_url),
        AttributeNames=["ApproximateNumberOfMessages"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"])


def _everything(stack, db_env) -> str:
    """Every table's items, every queue's messages (not consumed) and every job, as one text."""
    found = []
    for table in stack.dynamodb.list_tables()["TableNames"]:
        found += [json.dumps(i) for i in stack.dynamodb.scan(TableName=table)["Items"]]
    for url in stack.sqs.list_queues().get("QueueUrls", []):
        for _ in range(3):
            found += [
                json.dumps(m)
                for m in stack.sqs.receive_message(
                    QueueUrl=url,
                    MaxNumberOfMessages=10,
                    VisibilityTimeout=0,
                    MessageAttributeNames=["All"],
                ).get("Messages", [])
            ]
    jobs = stack.manage(
        "shell",
        "-c",
        "import json; from jobs.models import Job, JobStep; from audit.models import JournalReadAudit as A\n"
        "print(json.dumps([[j.inputs, j.result, j.error] for j in Job.objects.all()]))\n"
        "print(json.dumps([s.detail for s in JobStep.objects.all()]))\n"
        "print(json.dumps(list(A.objects.values_list('query', flat=True))))",
        env=db_env,
    ).stdout
    return "\n".join([*found, jobs])


def test_an_erasure_stays_erased_through_late_events_dead_letters_and_a_redrive(
    e2e_stack, tmp_path
):
    """Dana's email is sent; an event is still in flight, an older one with her display name sits
    in the unmatched table, her requests are on the dead-letter queue (one with another recipient,
    spelt ``"dana"@example.com``). After the erasure the late event lands and a later dead letter is
    redriven: no table, queue, log line or job input holds her address."""
    stack = e2e_stack
    db_env = stack.console_database(tmp_path / "console.sqlite3")
    logs: list[str] = []

    def run(*args: str) -> str:
        result = stack.manage(*args, env=db_env)
        logs.append(result.stdout + result.stderr)
        return result.stdout

    request = {
        "messageId": "added-to-team",
        "dedupeId": "dana-1",
        "recipients": [{"email": "dana@example.com", "name": "Dana Example"}],
        "context": {"teamName": "Ops", "administrator": "Ann"},
    }
    stack.enqueue([request])
    stack.consume()  # before the erasure: its log lines name her, as any send's do
    key = "dana-1:dana@example.com"
    ses_id = stack.row(key)["SesMessageId"]
    _unmatched(stack, "evt-dana-named", '"Dana Example" <Dana@Example.com>')
    _dead_letter(stack, ['"dana"@example.com', "erin@example.com"])
    _dead_letter(stack, ["Dana@Example.com"])

    erased = run("erase_recipient", "dana@example.com", "--yes", "--reason", "ticket 9")
    assert "removed 1 journal row(s) written by emailops" in erased
    assert "removed 1 unmatched delivery event(s)" in erased
    assert "rewrote 1 dead-letter message(s) without the address and dropped 1" in erased

    # The event that was in flight lands now (retried once: it has no row, then stored).
    stack.sqs.send_message(
        QueueUrl=stack.direct(stack.events_queue_url), MessageBody=_late_event(ses_id, key)
    )
    for _ in range(4):
        logs.append(stack.consume("consume_ses_events").stderr)
        # The retried event's back-off (1 s): wait until it is visible again, or gone.
        wait_until(lambda: _visible(stack) or not stack.depth(stack.events_queue_url), timeout=15)
        if not stack.depth(stack.events_queue_url):
            break
    stored = stack.dynamodb.scan(TableName=UNMATCHED)["Items"]
    # (the first test's own unmatched items carry no Reason: its fixture writes them bare)
    assert any("a recipient was erased" in i.get("Reason", {}).get("S", "") for i in stored)

    # A request to her dead-lettered after the erasure, then everything redriven and consumed.
    _dead_letter(stack, ["dana@example.com"])
    redriven = run("dlq", "redrive", "--all", "--rate", "50")
    logs.append(redriven)
    logs.append(stack.consume().stderr)
    assert stack.sent_to("erin@example.com")  # the other recipient's request still went
    statuses = stack.journal_statuses()
    assert not [k for k in statuses if "dana" in k.lower()]

    everything = _everything(stack, db_env) + "\n".join(logs)
    assert "erin@example.com" in everything  # the search does see addresses
    assert "dana@example.com" not in everything.lower()
    assert '"dana"@example.com' not in everything.lower()
