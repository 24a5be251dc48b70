"""EmailPipeline.process with in-memory ports: what it sends, what it journals, and what it tells
the queue to do, for every way a record can go."""

from __future__ import annotations

import json
from email.header import decode_header, make_header
from email.utils import parseaddr

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emailops.core.compose import Composer
from emailops.core.contract import parse_request
from emailops.core.dedupe import dedupe_key
from emailops.core.errors import (
    ConcurrentUpdate,
    SendRejected,
    TemplateError,
    TransientError,
)
from emailops.core.pipeline import (
    Action,
    EmailPipeline,
    PipelineSettings,
    backoff_seconds,
)
from emailops.core.ports import Status, TemplateMapping
from emailops.core.rendering import Renderer
from emailops.pipeline_build import send_policies
from tests.conftest import fixture_body
from tests.fakes import DictMappings, DictTemplates, InMemoryJournal, RecordingSender

NOW = 1_750_000_000
LEASE = 30
FROM = "Pennsieve <support@pennsieve.test>"
REPLY_TO = ("help@pennsieve.test",)


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Stack:
    """A pipeline over fakes, with the sample-like mappings and templates."""

    def __init__(self) -> None:
        self.mappings = DictMappings(
            TemplateMapping(
                "dataset-publication-accepted",
                "dataset-publication-accepted.html",
                "Dataset {{.datasetName}} accepted",
            ),
            TemplateMapping(
                "dataset-proposal-submitted",
                "dataset-proposal-submitted.html",
                "New proposal: {{.ProposalTitle}}",
            ),
            TemplateMapping("added-to-team", "added-to-team.html", "Added to {{.teamName}}"),
            TemplateMapping("sandbox", "sandbox.html", "Escape"),
            TemplateMapping("no-template", "absent.html", "Nothing"),
        )
        self.templates = DictTemplates(
            {
                "default/dataset-publication-accepted.html": (
                    "<p>Dear reviewer, {{.reviewerName}} accepted {{.datasetName}}.</p>"
                ),
                "custom/O367/dataset-publication-accepted.html": "<p>Branded {{.datasetName}}</p>",
                "default/dataset-proposal-submitted.html": "<p>{{.AuthorName}}: {{.ProposalTitle}}</p>",
                "default/added-to-team.html": "<p>{{.administrator}} added you to {{.teamName}}</p>",
                "default/sandbox.html": "{{ ''.__class__.__mro__ }}",
            }
        )
        self.journal = InMemoryJournal()
        self.sender = RecordingSender()
        self.clock = Clock()
        self.sleeps: list[float] = []
        self.pipeline = EmailPipeline(
            composer=Composer(
                mappings=self.mappings, templates=self.templates, renderer=Renderer()
            ),
            journal=self.journal,
            sender=self.sender,
            settings=PipelineSettings(from_address=FROM, reply_to=REPLY_TO, lease_seconds=LEASE),
            policies=send_policies(),
            clock=self.clock,
            sleep=self.sleeps.append,
        )
        self.controls: dict = {}

    def use(self, **controls) -> None:
        """Turn send controls on (``send_policies``' collaborators: ``suppressions=``,
        ``gate=``, ...), in the chain the container composes."""
        self.controls |= controls
        self.pipeline.policies = send_policies(**self.controls)

    def process(self, body: str, state=None):
        return self.pipeline.process(body, record_id="sqs-1", state=state)

    def row(self, body: str, email: str) -> dict | None:
        return self.journal.rows.get(dedupe_key(parse_request(body), email))

    def put_row(self, body: str, email: str, **values) -> str:
        request = parse_request(body)
        key = dedupe_key(request, email)
        self.journal.rows[key] = {
            "Id": key,
            "MessageId": request.message_id,
            "Recipient": email,
            "Context": request.context,
        } | values
        return key


@pytest.fixture
def stack() -> Stack:
    return Stack()


MINIMAL = fixture_body("minimal.json")
MULTI = fixture_body("multi-recipient.json")


def request_body(message_id="dataset-publication-accepted", recipients=None, **context) -> str:
    return json.dumps(
        {
            "messageId": message_id,
            "recipients": recipients or [{"name": "Alice", "email": "alice@example.com"}],
            "context": context,
        }
    )


# --- the happy paths -----------------------------------------------------------------------------


def test_multi_recipient_all_sent(stack):
    outcome = stack.process(MULTI)
    assert outcome.action is Action.DELETE
    assert (outcome.sent, outcome.skipped) == (2, 0)
    assert [e.to for e in stack.sender.sent] == [
        "Reviewer One <rev1@example.com>",
        "Reviewer Two <rev2@example.com>",
    ]
    for i, email in enumerate(["rev1@example.com", "rev2@example.com"], start=1):
        row = stack.row(MULTI, email)
        assert row["Status"] == Status.SENT
        assert row["SesMessageId"] == f"ses-{i}"
        assert row["Attempts"] == 1
        assert row["Recipient"] == email
        assert row["MessageId"] == "dataset-proposal-submitted"
        assert row["Subject"] == "New proposal: A Study"
        assert row["TemplateKey"] == "default/dataset-proposal-submitted.html"
        assert row["Context"] == json.loads(MULTI)["context"]
        assert row["Timestamp"] == NOW
        assert row["ClaimExpiresAt"] == NOW + LEASE
        assert row["ExpiresAt"] == NOW + 90 * 86400


def test_the_sent_email(stack):
    body = request_body(
        recipients=[{"name": 'Zoë, the "Reviewer"', "email": "zoe@example.com"}],
        datasetName="<script>alert(1)</script> & more",
        reviewerName="Bob",
    )
    assert stack.process(body).action is Action.DELETE
    [email] = stack.sender.sent
    assert email.from_address == FROM
    assert email.reply_to == REPLY_TO
    name, address = parseaddr(email.to)
    assert address == "zoe@example.com"
    assert str(make_header(decode_header(name))) == 'Zoë, the "Reviewer"'
    assert email.to.isascii() and "\n" not in email.to
    assert "<script>" not in email.html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in email.html
    assert email.subject == "Dataset <script>alert(1)</script> & more accepted"  # plain text
    assert "<script>alert(1)</script> & more" in email.text


def test_recipient_without_a_name_is_a_bare_address(stack):
    stack.process(request_body(recipients=[{"email": "bob@example.com"}]))
    assert stack.sender.sent[0].to == "bob@example.com"


def test_subject_override(stack):
    body = request_body(
        subject="Re: {{.datasetName}} & {{ reviewerName }}", datasetName="D", reviewerName="<B>"
    )
    stack.process(body)
    assert stack.sender.sent[0].subject == "Re: D & <B>"
    assert stack.row(body, "alice@example.com")["Subject"] == "Re: D & <B>"


def test_branded_template(stack):
    stack.process(fixture_body("with-organization.json"))
    assert stack.sender.sent[0].html == "<p>Branded My Dataset</p>"
    row = stack.row(fixture_body("with-organization.json"), "alice@example.com")
    assert row["TemplateKey"] == "custom/O367/dataset-publication-accepted.html"


def test_dedupe_id_keys_the_row(stack):
    body = fixture_body("with-dedupe-id.json")
    stack.process(body)
    assert "team-invite-evt-12345:carol@example.com" in stack.journal.rows


# --- duplicates and leases -------------------------------------------------------------------


def test_duplicate_delivery_is_skipped(stack):
    stack.process(MULTI)
    stack.clock.now += 5
    outcome = stack.process(MULTI)
    assert outcome.action is Action.DELETE
    assert (outcome.sent, outcome.skipped) == (0, 2)
    assert len(stack.sender.sent) == 2


def test_only_the_unsent_recipient_is_sent(stack):
    stack.put_row(MULTI, "rev1@example.com", Status=Status.SENT, Timestamp=NOW - 100)
    outcome = stack.process(MULTI)
    assert outcome.action is Action.DELETE
    assert (outcome.sent, outcome.skipped) == (1, 1)
    assert [e.to for e in stack.sender.sent] == ["Reviewer Two <rev2@example.com>"]


def test_failed_row_is_reclaimed_and_sent(stack):
    stack.put_row(
        MINIMAL,
        "alice@example.com",
        Status=Status.FAILED,
        Timestamp=NOW - 100,
        Attempts=2,
        Error="boom",
    )
    outcome = stack.process(MINIMAL)
    assert outcome.action is Action.DELETE
    assert outcome.sent == 1
    row = stack.row(MINIMAL, "alice@example.com")
    assert row["Status"] == Status.SENT
    assert row["Attempts"] == 3


def test_live_lease_means_wait_until_it_ends(stack):
    stack.put_row(
        MINIMAL,
        "alice@example.com",
        Status=Status.QUEUED,
        Timestamp=NOW - 10,
        ClaimExpiresAt=NOW + 20,
        Attempts=1,
    )
    outcome = stack.process(MINIMAL)
    assert outcome.action is Action.WAIT
    assert outcome.wait_until == NOW + 20
    assert stack.sender.sent == []
    assert stack.row(MINIMAL, "alice@example.com")["Attempts"] == 1


def test_wait_until_is_the_latest_lease(stack):
    stack.put_row(
        MULTI, "rev1@example.com", Status=Status.QUEUED, Timestamp=NOW, ClaimExpiresAt=NOW + 20
    )
    stack.put_row(
        MULTI, "rev2@example.com", Status=Status.QUEUED, Timestamp=NOW, ClaimExpiresAt=NOW + 25
    )
    outcome = stack.process(MULTI)
    assert (outcome.action, outcome.wait_until) == (Action.WAIT, NOW + 25)


def test_expired_lease_is_taken_over_and_sent_once(stack):
    stack.put_row(
        MINIMAL,
        "alice@example.com",
        Status=Status.QUEUED,
        Timestamp=NOW - 100,
        ClaimExpiresAt=NOW - 1,
        Attempts=1,
    )
    outcome = stack.process(MINIMAL)
    assert (outcome.action, outcome.sent) == (Action.DELETE, 1)
    assert stack.row(MINIMAL, "alice@example.com")["Attempts"] == 2
    assert stack.process(MINIMAL).skipped == 1
    assert len(stack.sender.sent) == 1


def test_go_style_queued_row_past_its_lease_is_sent_once(stack):
    # The Go consumer writes no ClaimExpiresAt: its lease ends LEASE seconds after Timestamp.
    stack.put_row(MINIMAL, "alice@example.com", Status=Status.QUEUED, Timestamp=NOW - LEASE - 1)
    outcome = stack.process(MINIMAL)
    assert (outcome.action, outcome.sent) == (Action.DELETE, 1)
    assert stack.process(MINIMAL).skipped == 1
    assert len(stack.sender.sent) == 1


def test_go_style_queued_row_within_its_lease_means_wait(stack):
    stack.put_row(MINIMAL, "alice@example.com", Status=Status.QUEUED, Timestamp=NOW - 10)
    outcome = stack.process(MINIMAL)
    assert (outcome.action, outcome.wait_until) == (Action.WAIT, NOW - 10 + LEASE)
    assert stack.sender.sent == []


# --- send failures -----------------------------------------------------------------------------


def test_transient_send_error_marks_failed_and_retries(stack):
    stack.sender.errors.append(TransientError("send email", reason="Throttling: slow down"))
    outcome = stack.process(MINIMAL)
    assert outcome.action is Action.RETRY
    assert "Throttling" in outcome.reason
    assert outcome.sent == 0
    row = stack.row(MINIMAL, "alice@example.com")
    assert row["Status"] == Status.FAILED
    assert "Throttling: slow down" in row["Error"]

    stack.clock.now += 60
    outcome = stack.process(MINIMAL)  # the redelivery
    assert (outcome.action, outcome.sent) == (Action.DELETE, 1)
    assert stack.row(MINIMAL, "alice@example.com")["Attempts"] == 2


def test_permanent_send_error_marks_failed_and_dead_letters(stack):
    stack.sender.errors.append(SendRejected("send email", reason="MessageRejected: bad address"))
    outcome = stack.process(MINIMAL)
    assert outcome.action is Action.DEAD_LETTER
    assert "MessageRejected" in outcome.reason
    row = stack.row(MINIMAL, "alice@example.com")
    assert row["Status"] == Status.FAILED
    assert "bad address" in row["Error"]


def test_one_recipient_failing_transiently_retries_the_record(stack):
    stack.sender.errors.append(TransientError("send email", reason="503"))
    outcome = stack.process(MULTI)
    assert (outcome.action, outcome.sent) == (Action.RETRY, 1)
    assert stack.row(MULTI, "rev1@example.com")["Status"] == Status.FAILED
    assert stack.row(MULTI, "rev2@example.com")["Status"] == Status.SENT
    outcome = stack.process(MULTI)
    assert (outcome.action, outcome.sent, outcome.skipped) == (Action.DELETE, 1, 1)
    assert len(stack.sender.sent) == 2


def test_transient_trouble_outranks_waiting_which_outranks_dead_letter(stack):
    stack.put_row(
        MULTI, "rev2@example.com", Status=Status.QUEUED, Timestamp=NOW, ClaimExpiresAt=NOW + 20
    )
    stack.sender.errors.append(SendRejected("send email", reason="no"))
    assert stack.process(MULTI).action is Action.WAIT  # rev1 dead, rev2 busy: look again later

    stack = Stack()
    stack.put_row(
        MULTI, "rev2@example.com", Status=Status.QUEUED, Timestamp=NOW, ClaimExpiresAt=NOW + 20
    )
    stack.sender.errors.append(TransientError("send email", reason="503"))
    assert stack.process(MULTI).action is Action.RETRY


def test_claim_errors(stack):
    stack.journal.fail_next["claim"] = TransientError("claim journal row", reason="throttled")
    outcome = stack.process(MINIMAL)
    assert outcome.action is Action.RETRY
    assert stack.sender.sent == []

    stack.journal.fail_next["claim"] = ConcurrentUpdate(
        "claim journal row", reason="ValidationException"
    )
    assert stack.process(MINIMAL).action is Action.DEAD_LETTER
    assert stack.sender.sent == []


def test_mark_sent_failing_once_is_retried_while_the_record_is_held(stack):
    stack.journal.fail_next["mark_sent"] = TransientError("mark journal row SENT", reason="503")
    outcome = stack.process(MINIMAL)
    assert (outcome.action, outcome.sent) == (Action.DELETE, 1)
    assert len(stack.sender.sent) == 1
    assert stack.row(MINIMAL, "alice@example.com")["Status"] == Status.SENT
    assert stack.sleeps == [0.2]


def test_lease_lost_before_mark_sent_still_counts_as_sent(stack):
    original = stack.journal.mark_sent

    def steal_then_mark(key, **kwargs):
        stack.journal.rows[key]["Attempts"] += 1  # someone else claimed it meanwhile
        return original(key, **kwargs)

    stack.journal.mark_sent = steal_then_mark
    outcome = stack.process(MINIMAL)
    assert (outcome.action, outcome.sent) == (Action.DELETE, 1)
    assert stack.row(MINIMAL, "alice@example.com")["Status"] == Status.QUEUED


def test_mark_failed_failing_still_retries(stack):
    stack.sender.errors.append(TransientError("send email", reason="503"))
    stack.journal.fail_next["mark_failed"] = TransientError("mark journal row FAILED", reason="503")
    assert stack.process(MINIMAL).action is Action.RETRY


# --- requests that can never be sent ----------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("not json", "not JSON"),
        ("[]", "object"),
        ('{"recipients":[{"email":"a@example.com"}]}', "messageId"),
        ('{"messageId":"m","recipients":[]}', "no recipients"),
        ('{"messageId":"m","recipients":[{"email":"nope"}]}', "recipients[0].email"),
        ('{"messageId":"m","recipients":[{"email":"a@example.com"}],"context":[1]}', "context"),
        (
            '{"messageId":"m","recipients":[{"email":"a@example.com"}],"context":{"n":1e999}}',
            "JSON",
        ),
    ],
)
def test_invalid_body_is_dead_lettered_with_rows_only_for_known_recipients(stack, body, words):
    outcome = stack.process(body)
    assert outcome.action is Action.DEAD_LETTER
    assert words in outcome.reason
    rows = list(stack.journal.rows.values())
    if '"nope"' in body:  # the recipient is known: its FAILED row says why
        assert [(r["Recipient"], r["Status"]) for r in rows] == [("nope", Status.FAILED)]
    else:
        assert rows == []
    assert stack.sender.sent == []


def test_bad_organization_id_falls_back_to_the_default_template_with_a_warning(stack, caplog):
    body = request_body(
        recipients=[{"email": "a@example.com"}, {"email": "b@example.com"}],
        organizationId="../x",
        datasetName="D",
    )
    outcome = stack.process(body)
    assert (outcome.action, outcome.sent) == (Action.DELETE, 2)
    assert stack.templates.reads == [
        "default/dataset-publication-accepted.html"
    ]  # no S3 key from it
    assert "event=request.warning" in caplog.text and "organizationId" in caplog.text


def test_an_invalid_recipient_gets_a_failed_row_and_the_others_are_sent(stack):
    body = request_body(recipients=[{"email": "a@example.com"}, {"email": "not an address"}])
    outcome = stack.process(body)
    assert (outcome.action, outcome.sent) == (Action.DELETE, 1)
    row = stack.row(body, "not an address")
    assert row["Status"] == Status.FAILED and "recipients[1]" in row["Error"]
    assert [e.to for e in stack.sender.sent] == ["a@example.com"]


@pytest.mark.parametrize(
    ("message_id", "words"),
    [
        ("unknown-message", "no such messageId"),
        ("no-template", "default/absent.html"),
        ("sandbox", "sandbox"),
    ],
)
def test_compose_failures_dead_letter_with_failed_rows_but_never_overwrite_sent(
    stack, message_id, words
):
    body = request_body(
        message_id=message_id,
        recipients=[
            {"email": "a@example.com"},
            {"email": "sent@example.com"},
            {"email": "busy@example.com"},
        ],
    )
    sent_key = stack.put_row(
        body, "sent@example.com", Status=Status.SENT, Timestamp=NOW - 5, SesMessageId="ses-old"
    )
    busy_key = stack.put_row(
        body, "busy@example.com", Status=Status.QUEUED, Timestamp=NOW - 5, ClaimExpiresAt=NOW + 25
    )
    outcome = stack.process(body)
    assert outcome.action is Action.DEAD_LETTER
    assert words in outcome.reason
    assert stack.sender.sent == []
    failed = stack.row(body, "a@example.com")
    assert failed["Status"] == Status.FAILED
    assert words in failed["Error"]
    assert failed["Subject"] == "" and failed["TemplateKey"] == ""
    assert stack.journal.rows[sent_key]["Status"] == Status.SENT
    assert stack.journal.rows[sent_key]["SesMessageId"] == "ses-old"
    assert stack.journal.rows[busy_key]["Status"] == Status.QUEUED


def test_template_error_outcome_names_the_line(stack):
    stack.templates.templates["default/added-to-team.html"] = "<p>\n{{if .x}}</p>"
    outcome = stack.process(fixture_body("with-dedupe-id.json"))
    assert outcome.action is Action.DEAD_LETTER
    assert "never closed" in outcome.reason


@pytest.mark.parametrize("where", ["mappings", "templates"])
def test_transient_fetch_errors_retry_without_rows(stack, where):
    getattr(stack, where).error = TransientError("fetch", reason="SlowDown")
    outcome = stack.process(MINIMAL)
    assert outcome.action is Action.RETRY
    assert "SlowDown" in outcome.reason
    assert stack.journal.rows == {}
    assert stack.sender.sent == []


def test_record_failure_errors_do_not_escape(stack):
    def broken(claim, *, error, **facts):
        raise TransientError("record FAILED journal row", reason="503")

    stack.journal.record_failure = broken
    assert stack.process(request_body(message_id="unknown")).action is Action.DEAD_LETTER


# --- regressions: records that used to crash process() -----------------------------------------


def test_missing_list_index_in_a_template_is_sent_not_crashed(stack):
    stack.templates.templates["default/added-to-team.html"] = "<p>{{index .admins 3}}</p>"
    outcome = stack.process(fixture_body("with-dedupe-id.json"))
    assert (outcome.action, outcome.sent) == (Action.DELETE, 1)


def test_lone_surrogate_in_the_context_is_sent_as_a_replacement_character(stack):
    body = '{"messageId":"added-to-team","recipients":[{"email":"a@example.com"}],"context":{"teamName":"T\\ud800"}}'
    assert stack.process(body).action is Action.DELETE
    assert stack.sender.sent[0].subject == "Added to T\ufffd"
    assert stack.sender.sent[0].html.encode("utf-8")


# --- back-off -----------------------------------------------------------------------------------


def test_backoff_examples():
    low = lambda a, b: a  # noqa: E731
    high = lambda a, b: b  # noqa: E731
    assert backoff_seconds(1, base=30, cap=900, rng=high) == 30
    assert backoff_seconds(1, base=30, cap=900, rng=low) == 15
    assert backoff_seconds(2, base=30, cap=900, rng=high) == 60
    assert backoff_seconds(5, base=30, cap=900, rng=high) == 480
    assert backoff_seconds(6, base=30, cap=900, rng=high) == 900
    assert backoff_seconds(60, base=30, cap=900, rng=low) == 450
    assert backoff_seconds(0, base=30, cap=900, rng=high) == 30
    assert backoff_seconds(1, base=1, cap=900, rng=low) == 1  # never 0


@settings(deadline=None)
@given(
    n=st.integers(min_value=0, max_value=200),
    base=st.integers(min_value=1, max_value=600),
    cap=st.integers(min_value=1, max_value=43_200),
)
def test_backoff_bounds(n, base, cap):
    ceiling = min(cap, base * 2 ** max(0, n - 1))
    for rng in (lambda a, b: a, lambda a, b: b, lambda a, b: (a + b) / 2):
        delay = backoff_seconds(n, base=base, cap=cap, rng=rng)
        assert isinstance(delay, int)
        assert max(1, ceiling // 2) <= delay <= ceiling
    delay = backoff_seconds(n, base=base, cap=cap)  # the real jitter
    assert max(1, ceiling // 2) <= delay <= ceiling


def test_backoff_passes_half_and_all_of_the_ceiling_to_the_jitter():
    seen = []
    backoff_seconds(3, base=10, cap=900, rng=lambda a, b: seen.append((a, b)) or b)
    assert seen == [(20.0, 40)]


def test_template_error_is_not_retried(stack):
    stack.templates.error = TemplateError("fetch template", reason="not UTF-8 text")
    assert stack.process(MINIMAL).action is Action.DEAD_LETTER


@pytest.mark.parametrize("depth", [400, 5000])
def test_deeply_nested_context_is_dead_lettered_not_crashed(stack, depth):
    body = request_body(datasetName="D")[:-2] + ', "deep": ' + "[" * depth + "]" * depth + "}}"
    outcome = stack.process(body)
    assert outcome.action is Action.DEAD_LETTER
    assert "nested" in outcome.reason or "recursion" in outcome.reason
    assert stack.journal.rows == {}


# --- a producer's namespace (the send API's tenancy) ---------------------------------------------


def test_a_namespace_prefixes_the_go_key_and_owns_its_rows(stack):
    body = fixture_body("with-dedupe-id.json")
    go_key = "team-invite-evt-12345:carol@example.com"

    assert stack.pipeline.process(body, namespace="api:1").action is Action.DELETE
    assert stack.pipeline.process(body, namespace="api:2").action is Action.DELETE
    assert stack.process(body).action is Action.DELETE  # the queue path: the Go key, unchanged

    assert stack.journal.rows[f"api:1:{go_key}"]["Producer"] == "api:1"
    assert stack.journal.rows[f"api:2:{go_key}"]["Producer"] == "api:2"
    assert "Producer" not in stack.journal.rows[go_key]
    assert len(stack.sender.sent) == 3


def test_a_row_of_another_producer_under_the_same_key_is_never_taken(stack):
    body = fixture_body("with-dedupe-id.json")
    key = "api:1:team-invite-evt-12345:carol@example.com"
    stack.journal.rows[key] = {"Id": key, "Status": "SENT", "Timestamp": 0, "SesMessageId": "x"}

    outcome = stack.pipeline.process(body, namespace="api:1")

    assert outcome.action is Action.DEAD_LETTER and "another producer" in outcome.reason
    assert stack.sender.sent == [] and "Producer" not in stack.journal.rows[key]
