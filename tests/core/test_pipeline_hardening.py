"""The pipeline under trouble: the send→mark window, the retry budget, configuration faults, the
daily quota, throttling, suppression, and recipients delivered on threads."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from emailops.core.errors import (
    ConfigurationFault,
    DailyQuotaExceeded,
    SendRejected,
    SendThrottled,
    TransientError,
)
from emailops.core.pipeline import Action, HeldClaims
from emailops.core.ports import Status
from emailops.core.retry import RetryState
from tests.core.test_pipeline import LEASE, MINIMAL, MULTI, Stack, request_body


@pytest.fixture
def stack() -> Stack:
    return Stack()


MARK_DOWN = TransientError("mark journal row SENT", reason="ServiceUnavailable")


class RecordingLimiter:
    def __init__(self) -> None:
        self.acquired = 0
        self.throttled = 0
        self.quota_hits = 0
        self.paused = False

    def acquire(self) -> float:
        if self.paused:
            raise DailyQuotaExceeded("send email", reason="sending paused: daily quota")
        self.acquired += 1
        return 0.25

    def on_throttled(self) -> None:
        self.throttled += 1

    def on_daily_quota_exceeded(self) -> None:
        self.quota_hits += 1
        self.paused = True


class Suppressed:
    def __init__(self, **reasons: str) -> None:
        self.reasons = {k.replace("_at_", "@").replace("_", "."): v for k, v in reasons.items()}

    def suppression_reason(self, address: str) -> str | None:
        return self.reasons.get(address.lower())


def alice_row(stack: Stack) -> dict:
    return stack.row(MINIMAL, "alice@example.com")


# --- the send→mark window ----------------------------------------------------------------------


def test_mark_failing_for_good_carries_the_acceptance_and_never_sends_twice(stack):
    stack.journal.fail_next["mark_sent"] = [MARK_DOWN] * 5
    first = stack.process(MINIMAL)
    assert first.action is Action.RETRY
    assert dict(first.state.accepted) == {alice_row(stack)["Id"]: "ses-1"}
    assert alice_row(stack)["Status"] == Status.QUEUED

    # Redeliveries come after the lease; the first still cannot mark, the second can.
    stack.clock.now += LEASE * 10
    stack.journal.fail_next["mark_accepted"] = [MARK_DOWN]
    second = stack.process(MINIMAL, state=first.state)
    assert second.action is Action.RETRY and second.state.accepted == first.state.accepted
    stack.clock.now += LEASE * 10
    third = stack.process(MINIMAL, state=second.state)

    assert third.action is Action.DELETE and third.sent == 1
    assert len(stack.sender.sent) == 1  # exactly one SES send
    assert alice_row(stack)["Status"] == Status.SENT
    assert alice_row(stack)["SesMessageId"] == "ses-1"


def test_an_accepted_recipient_is_marked_while_the_others_are_sent(stack):
    first_key = stack.put_row(MULTI, "rev1@example.com", Status=Status.QUEUED, Timestamp=0)
    state = RetryState(first_attempt_at=1, attempts=1, accepted={first_key: "ses-early"})
    outcome = stack.process(MULTI, state=state)
    assert (outcome.action, outcome.sent) == (Action.DELETE, 2)
    assert stack.row(MULTI, "rev1@example.com")["SesMessageId"] == "ses-early"
    assert [e.to for e in stack.sender.sent] == ["Reviewer Two <rev2@example.com>"]


# --- the retry budget ---------------------------------------------------------------------------


def test_transient_trouble_retries_until_the_budget_is_spent_then_dead_letters_with_rows(stack):
    outage = TransientError("send email", reason="ServiceUnavailable: 503")
    state = None
    for _ in range(4):
        stack.sender.errors.append(outage)
        outcome = stack.process(MINIMAL, state=state)
        assert outcome.action is Action.RETRY
        state = outcome.state
        stack.clock.now += 25_000
    assert state.attempts == 4 and state.first_attempt_at > 0
    stack.sender.errors.append(outage)
    final = stack.process(MINIMAL, state=state)
    assert final.action is Action.DEAD_LETTER
    assert "retry budget exhausted" in final.reason and "503" in final.reason
    row = alice_row(stack)
    assert row["Status"] == Status.FAILED and "retry budget exhausted" in row["Error"]


def test_waiting_for_another_consumer_does_not_use_the_budget(stack):
    stack.put_row(MINIMAL, "alice@example.com", Status=Status.QUEUED, Timestamp=stack.clock.now)
    state = RetryState(first_attempt_at=1, attempts=7)
    outcome = stack.process(MINIMAL, state=state)
    assert outcome.action is Action.WAIT and outcome.state == state


# --- configuration faults, the daily quota, throttling -----------------------------------------


def test_a_configuration_fault_waits_without_failed_rows(stack):
    stack.sender.errors.append(
        ConfigurationFault(
            "send email",
            reason="MessageRejected: Email address is not verified",
            fix="verify the sender in SES",
        )
    )
    outcome = stack.process(MINIMAL)
    assert outcome.action is Action.WAIT
    assert outcome.fault == "verify the sender in SES"
    assert outcome.wait_until == stack.clock.now + 60
    row = alice_row(stack)
    assert row["Status"] == Status.QUEUED and row["ClaimExpiresAt"] == 0  # released, claimable
    assert stack.process(MINIMAL).action is Action.DELETE  # fixed: it goes out
    assert len(stack.sender.sent) == 1


def test_a_configuration_fault_while_composing_waits(stack):
    stack.templates.error = ConfigurationFault("fetch template", reason="NoSuchBucket", fix="x")
    outcome = stack.process(MINIMAL)
    assert outcome.action is Action.WAIT and outcome.fault == "x"
    assert stack.journal.rows == {}


def test_the_daily_quota_pauses_sending_and_leaves_the_record_waiting(stack):
    limiter = RecordingLimiter()
    stack.pipeline.rate_limiter = limiter
    stack.sender.errors.append(DailyQuotaExceeded("send email", reason="Daily message quota"))
    outcome = stack.process(MULTI)
    assert outcome.action is Action.WAIT and "quota" in outcome.reason
    assert limiter.quota_hits == 1 and stack.sender.sent == []
    statuses = {row["Status"] for row in stack.journal.rows.values()}
    assert statuses == {Status.QUEUED}  # never FAILED


def test_throttling_lowers_the_rate_and_sends_in_place(stack):
    limiter = RecordingLimiter()
    stack.pipeline.rate_limiter = limiter
    stack.sender.errors += [SendThrottled("send email", reason="Maximum sending rate exceeded")] * 2
    outcome = stack.process(MINIMAL)
    assert (outcome.action, outcome.sent) == (Action.DELETE, 1)
    assert limiter.throttled == 2 and limiter.acquired == 3
    assert outcome.rate_wait == 0.75


def test_the_rate_is_taken_once_the_request_is_built_right_before_it_leaves(stack):
    """The slot's wait runs in the sender's before_send: the SDK's CPU work (building, signing)
    comes before it, so what lies between a slot and SES is the network alone."""
    order: list[str] = []

    class Limiter(RecordingLimiter):
        def acquire(self) -> float:
            order.append("slot")
            return super().acquire()

    class Sender:
        def send(self, email, *, before_send=None):
            order.append("built and signed")
            before_send()
            order.append("left")
            return "ses-1"

    stack.pipeline.rate_limiter = limiter = Limiter()
    stack.pipeline.sender = Sender()
    outcome = stack.process(MINIMAL)
    assert (outcome.action, outcome.sent, outcome.rate_wait) == (Action.DELETE, 1, 0.25)
    assert order == ["built and signed", "slot", "left"] and limiter.acquired == 1


def test_a_pause_met_while_taking_the_slot_sends_nothing_and_is_not_extended(stack):
    """DailyQuotaExceeded from the limiter (the pause in force) leaves through the sender: it must
    not be taken for SES's own answer, which would pause every consumer another 10 minutes."""
    limiter = RecordingLimiter()
    limiter.paused = True
    stack.pipeline.rate_limiter = limiter
    outcome = stack.process(MINIMAL)
    assert outcome.action is Action.WAIT and "quota" in outcome.reason
    assert limiter.quota_hits == 0 and limiter.acquired == 0 and stack.sender.sent == []
    assert alice_row(stack)["Status"] == Status.QUEUED and alice_row(stack)["ClaimExpiresAt"] == 0


# --- suppression and partly bad input ------------------------------------------------------------


def test_a_suppressed_address_gets_a_suppressed_row_and_no_email(stack):
    stack.use(suppressions=Suppressed(rev1_at_example_com="hard bounce"))
    outcome = stack.process(MULTI)
    assert (outcome.action, outcome.sent) == (Action.DELETE, 1)
    row = stack.row(MULTI, "rev1@example.com")
    assert row["Status"] == Status.SUPPRESSED and row["Error"] == "hard bounce"
    assert [e.to for e in stack.sender.sent] == ["Reviewer Two <rev2@example.com>"]


def test_a_suppressed_row_is_final_even_once_the_address_is_no_longer_suppressed(stack):
    stack.use(suppressions=Suppressed(alice_at_example_com="complaint"))
    stack.process(MINIMAL)
    stack.use(suppressions=Suppressed())
    outcome = stack.process(MINIMAL)  # a redelivery of the same request
    assert (outcome.action, outcome.skipped) == (Action.DELETE, 1)
    assert stack.sender.sent == [] and alice_row(stack)["Status"] == Status.SUPPRESSED


def test_a_permanent_failure_still_dead_letters(stack):
    stack.sender.errors.append(SendRejected("send email", reason="Illegal address"))
    assert stack.process(MINIMAL).action is Action.DEAD_LETTER


# --- recipients on threads -----------------------------------------------------------------------


def test_recipients_on_threads_are_each_sent_exactly_once_under_contention():
    stack = Stack()
    pool = ThreadPoolExecutor(8)
    stack.pipeline.fan_out = lambda fn, items: list(pool.map(fn, items))
    recipients = [{"email": f"user{i}@example.com"} for i in range(20)]
    body = request_body(recipients=recipients, datasetName="D")
    barrier = threading.Barrier(6)

    def deliver_once() -> None:
        barrier.wait()
        stack.pipeline.process(body)

    threads = [threading.Thread(target=deliver_once) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    pool.shutdown()
    sent_to = sorted(e.to for e in stack.sender.sent)
    assert sent_to == sorted(r["email"] for r in recipients)  # 6 deliveries, each sent once
    assert {row["Status"] for row in stack.journal.rows.values()} == {Status.SENT}


def test_claims_are_held_during_the_send_and_released_after(stack):
    held = HeldClaims()
    seen: list[dict] = []
    original = stack.sender.send

    def send(email, *, before_send=None):
        seen.append(held.snapshot())
        return original(email, before_send=before_send)

    stack.sender.send = send
    stack.pipeline.process(MINIMAL, held=held)
    key = alice_row(stack)["Id"]
    assert seen == [{key: 1}] and held.snapshot() == {}


# --- a refused recipient's FAILED row ----------------------------------------------------------


def test_a_refused_recipient_whose_failed_row_cannot_be_written_is_retried_not_dropped(stack):
    body = request_body(recipients=[{"email": "a@example.com"}, {"email": "not an address"}])
    stack.journal.fail_next["record_failure"] = TransientError(
        "record FAILED journal row", reason="ServiceUnavailable"
    )
    first = stack.process(body)
    assert first.action is Action.RETRY and first.sent == 1
    assert stack.row(body, "not an address") is None
    second = stack.process(body, state=first.state)  # the journal is back
    assert second.action is Action.DELETE and second.skipped == 1
    assert stack.row(body, "not an address")["Status"] == Status.FAILED
    assert [e.to for e in stack.sender.sent] == ["a@example.com"]


# --- a send after the lease was lost ---------------------------------------------------------


class ClaimedMeanwhile:
    """SES takes so long that our lease ends and another consumer claims the row meanwhile."""

    def __init__(self, stack: Stack, body: str) -> None:
        self.stack, self.body = stack, body

    def send(self, email, *, before_send=None):
        before_send()
        row = self.stack.row(self.body, "alice@example.com")
        row["Attempts"] += 1  # the other consumer's claim; it will send and mark its own
        return "ses-late"


def test_a_send_after_the_lease_was_lost_is_written_on_the_row_without_overwriting_it(
    stack, caplog
):
    stack.pipeline.sender = ClaimedMeanwhile(stack, MINIMAL)
    outcome = stack.process(MINIMAL)
    assert outcome.sent == 1
    row = alice_row(stack)
    assert row["Status"] == Status.QUEUED and "SesMessageId" not in row  # the other's to mark
    assert [(e["SesMessageId"], e["Attempt"]) for e in row["ExtraSends"]] == [("ses-late", 1)]
    assert "ERROR" in caplog.text and "event=recipient.sent_after_lease_lost" in caplog.text
