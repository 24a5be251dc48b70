"""Just before a send: never on a claim that may have lapsed, and never once the consumer stops."""

from __future__ import annotations

from emailops.core.errors import TransientError
from emailops.core.pipeline import Action, HeldClaims
from emailops.core.ports import Status
from tests.core.test_pipeline import LEASE, MINIMAL, NOW, Stack, request_body


class SlowLimiter:
    """The shared send rate, making the caller wait ``seconds`` of the stack's clock."""

    def __init__(self, stack: Stack, seconds: float) -> None:
        self.stack, self.seconds = stack, seconds

    def acquire(self) -> float:
        self.stack.clock.now += self.seconds
        return self.seconds

    def on_throttled(self) -> None: ...

    def on_daily_quota_exceeded(self) -> None: ...


def alice(stack: Stack) -> dict:
    return stack.row(MINIMAL, "alice@example.com")


def test_a_claim_short_of_the_margin_is_extended_before_the_send():
    stack = Stack()
    stack.pipeline.rate_limiter = SlowLimiter(stack, LEASE - 2)  # 2 s of the lease left
    outcome = stack.process(MINIMAL)
    assert outcome.action is Action.DELETE and len(stack.sender.sent) == 1
    # Extended at the send (NOW + 28) for a whole lease, before SES was called.
    assert alice(stack)["ClaimExpiresAt"] == NOW + LEASE - 2 + LEASE


def test_a_claim_that_cannot_be_extended_is_released_and_the_record_waits():
    stack = Stack()
    stack.pipeline.rate_limiter = SlowLimiter(stack, LEASE - 2)
    stack.journal.fail_next["extend_claim"] = TransientError("extend claim", reason="timeout")
    outcome = stack.process(MINIMAL)
    assert stack.sender.sent == []  # not sent on a claim with 2 s left
    assert outcome.action is Action.WAIT and "could not be extended" in outcome.reason
    assert alice(stack)["ClaimExpiresAt"] == 0  # released: the next delivery may claim at once


def test_a_claim_the_keeper_found_lost_is_never_sent_on():
    stack = Stack()
    held = HeldClaims()

    class Lost:
        def acquire(self) -> float:  # the keeper's extension came back "not ours" meanwhile
            (key, attempt), *_ = held.snapshot().items()
            held.mark_lost(key, attempt)
            return 0.0

    stack.pipeline.rate_limiter = Lost()
    outcome = stack.pipeline.process(MINIMAL, held=held)
    assert stack.sender.sent == [] and outcome.action is Action.WAIT


def test_a_lapsed_claim_taken_by_another_consumer_is_not_sent_on():
    stack = Stack()
    stack.pipeline.rate_limiter = SlowLimiter(stack, LEASE + 5)  # the lease ended in the wait

    def steal(limiter_acquire=stack.pipeline.rate_limiter.acquire):
        waited = limiter_acquire()
        alice(stack)["Attempts"] += 1  # another consumer claimed the lapsed row
        return waited

    stack.pipeline.rate_limiter.acquire = steal
    outcome = stack.process(MINIMAL)
    assert stack.sender.sent == [] and outcome.action is Action.WAIT


def test_after_a_stop_no_new_send_starts_and_the_rest_is_left_for_the_next_delivery():
    stack = Stack()
    stopping = []
    held = HeldClaims(stopping=lambda: bool(stopping))
    recipients = [{"email": f"u{i}@example.com"} for i in range(5)]
    body = request_body(recipients=recipients, datasetName="D")
    real_send = stack.sender.send

    def send(email, *, before_send=None):
        before_send()  # the send starts (its slot taken, its claim checked) ...
        stopping.append(True)  # ... and the stop comes during it
        return real_send(email)

    stack.sender.send = send
    outcome = stack.pipeline.process(body, held=held)
    assert [e.to for e in stack.sender.sent] == ["u0@example.com"]
    assert outcome.action is Action.WAIT and outcome.wait_until <= NOW + 1
    assert outcome.state.attempts == 0  # a stop costs no retry budget
    # The next delivery sends the other four, the first one is skipped as SENT.
    stack.sender.send = real_send
    assert stack.process(body).action is Action.DELETE
    assert sorted(e.to for e in stack.sender.sent) == sorted(r["email"] for r in recipients)
    assert {stack.row(body, r["email"])["Status"] for r in recipients} == {Status.SENT}


def test_a_stop_before_the_send_takes_no_slot():
    """A slot taken and not used is a send the whole account never makes: a consumer that is
    stopping (or a claim that is gone) is noticed before the slot is taken."""
    stack = Stack()
    stopping = []
    held = HeldClaims(stopping=lambda: bool(stopping))
    taken = []

    class Limiter:
        def acquire(self) -> float:
            taken.append(True)
            return 0.0

        def on_throttled(self) -> None: ...

        def on_daily_quota_exceeded(self) -> None: ...

    stack.pipeline.rate_limiter = Limiter()
    real_send = stack.sender.send

    def send(email, *, before_send=None):
        stopping.append(True)  # the stop comes while the request is built
        return real_send(email, before_send=before_send)

    stack.sender.send = send
    outcome = stack.pipeline.process(MINIMAL, held=held)
    assert stack.sender.sent == [] and taken == [] and outcome.action is Action.WAIT
    assert alice(stack)["ClaimExpiresAt"] == 0


def test_a_stop_during_the_rate_wait_releases_the_claim():
    stack = Stack()
    stopping = []
    held = HeldClaims(stopping=lambda: bool(stopping))

    class StopDuringWait:
        def acquire(self) -> float:
            stopping.append(True)
            return 0.0

    stack.pipeline.rate_limiter = StopDuringWait()
    outcome = stack.pipeline.process(MINIMAL, held=held)
    assert stack.sender.sent == [] and outcome.action is Action.WAIT
    assert alice(stack)["ClaimExpiresAt"] == 0
