"""The pipeline's side of the reputation guard: counters added only when the journal's
conditional write made the change, and the guard's pause/slow/go obeyed per priority."""

from __future__ import annotations

from emailops.core.contract import parse_request
from emailops.core.dedupe import dedupe_key
from emailops.core.errors import SendRejected, TransientError
from emailops.core.pipeline import Action
from emailops.core.ports import Status, TemplateMapping
from emailops.core.reputation import GateDecision, hour_of
from tests.core.test_pipeline import NOW, Stack, request_body
from tests.fakes import FixedGate, InMemoryStats


class Limiter:
    def __init__(self) -> None:
        self.acquired = 0

    def acquire(self) -> float:
        self.acquired += 1
        return 0.0

    def on_throttled(self) -> None: ...

    def on_daily_quota_exceeded(self) -> None: ...


def counted(gate: FixedGate | None = None) -> tuple[Stack, InMemoryStats, Limiter]:
    stack = Stack()
    stats, slow = InMemoryStats(), Limiter()
    stack.pipeline.stats = stats
    if gate is not None:
        stack.use(gate=gate, slow_limiter=slow)
    return stack, stats, slow


BODY = request_body(organizationId=367, datasetName="D", reviewerName="R")


def test_a_send_counts_once_for_the_account_the_message_and_the_organization():
    stack, stats, _ = counted()
    assert stack.process(BODY).action is Action.DELETE
    hour = hour_of(NOW)
    assert stats.items[("account", hour)] == {"sent": 1}
    assert stats.items[("message#dataset-publication-accepted", hour)] == {"sent": 1}
    assert stats.items[("org#367", hour)] == {"sent": 1}


def test_a_redelivered_record_counts_once():
    stack, stats, _ = counted()
    stack.process(BODY)
    again = stack.process(BODY)  # SQS delivered it again: the row is SENT, the claim says so
    assert again.skipped == 1
    assert stats.totals() == {"sent": 1}


def test_a_send_whose_claim_was_lost_is_not_counted_as_the_rows_outcome():
    stack, stats, _ = counted()
    original = stack.journal.mark_sent
    stack.journal.mark_sent = lambda key, **kw: False  # another consumer holds the row now
    stack.process(BODY)
    stack.journal.mark_sent = original
    assert stats.totals().get("sent", 0) == 0


def test_failed_and_suppressed_count_when_their_rows_are_written():
    stack, stats, _ = counted()
    stack.sender.errors.append(SendRejected("send email", reason="bad address"))
    stack.process(BODY)
    assert stats.totals() == {"failed": 1}

    class Suppressed:
        def suppression_reason(self, address):
            return "hard bounce"

    stack.use(suppressions=Suppressed())
    other = request_body(recipients=[{"name": "B", "email": "b@example.com"}], datasetName="D")
    stack.process(other)
    stack.process(other)  # the SUPPRESSED row is there already: not written, not counted
    assert stats.totals() == {"failed": 1, "suppressed": 1}


def test_a_stats_outage_never_fails_or_retries_a_send():
    stack, stats, _ = counted()
    stats.fail = TransientError("add reputation counts", reason="DynamoDB unavailable")
    outcome = stack.process(BODY)
    assert outcome.action is Action.DELETE and outcome.sent == 1
    key = dedupe_key(parse_request(BODY), "alice@example.com")
    assert stack.journal.rows[key]["Status"] == Status.SENT.value


def _with_priority(stack: Stack, priority: str) -> None:
    stack.mappings.rows["dataset-publication-accepted"] = TemplateMapping(
        "dataset-publication-accepted",
        "dataset-publication-accepted.html",
        "Dataset {{.datasetName}} accepted",
        priority=priority,
    )


def test_paused_bulk_waits_unclaimed_without_using_the_retry_budget():
    gate = FixedGate({"bulk": (GateDecision.PAUSE, "bounce rate 6 %")})
    stack, _, _ = counted(gate)
    _with_priority(stack, "bulk")
    outcome = stack.process(BODY)
    assert outcome.action is Action.WAIT
    assert outcome.wait_until == NOW + 60  # REPUTATION_PAUSE_WAIT_SECONDS's default
    assert "bounce rate 6 %" in outcome.reason
    assert outcome.state.attempts == 0  # no retry budget used
    assert stack.sender.sent == [] and stack.journal.rows == {}  # not claimed, not FAILED
    assert gate.asked == [("bulk", "367")]


def test_critical_goes_while_bulk_is_paused_and_normal_takes_the_slow_rate():
    gate = FixedGate({"bulk": (GateDecision.PAUSE, "act"), "normal": (GateDecision.SLOW, "act")})
    stack, _, slow = counted(gate)
    _with_priority(stack, "critical")
    assert stack.process(BODY).action is Action.DELETE
    assert slow.acquired == 0
    _with_priority(stack, "normal")
    other = request_body(recipients=[{"name": "B", "email": "b@example.com"}], datasetName="D")
    assert stack.process(other).action is Action.DELETE
    assert slow.acquired == 1 and len(stack.sender.sent) == 2


def test_a_failing_gate_lets_mail_flow():
    class Broken:
        def decide(self, **kwargs):
            raise ConnectionError("redis down")

    stack, _, _ = counted(Broken())
    _with_priority(stack, "bulk")
    assert stack.process(BODY).action is Action.DELETE


def test_a_send_marked_by_a_later_attempt_counts_once_when_that_mark_lands():
    stack, stats, _ = counted()
    stack.journal.fail_next["mark_sent"] = [TransientError("mark", reason="down")] * 5
    first = stack.process(BODY)  # SES accepted; the SENT mark could not be stored
    assert first.action is Action.RETRY and first.state.accepted
    assert stats.totals().get("sent", 0) == 0
    stack.clock.now += 10_000  # the next delivery, after the lease
    stack.process(BODY, state=first.state)  # marks the earlier send: counted now
    stack.process(BODY, state=first.state)  # a stale copy of the record: already SENT
    assert len(stack.sender.sent) == 1
    assert stats.totals() == {"sent": 1}


def test_sends_settled_for_a_record_that_cannot_be_retried_count_once():
    stack, stats, _ = counted()
    stack.journal.fail_next["mark_sent"] = [TransientError("mark", reason="down")] * 5
    first = stack.process(BODY)  # SES accepted; the mark failed; the retry copy will fail too
    settled = stack.pipeline.settle_accepted_sends(first.state, body=BODY)
    stack.pipeline.settle_accepted_sends(first.state, body=BODY)  # twice: already SENT
    assert not settled.accepted
    assert stats.totals() == {"sent": 1}
