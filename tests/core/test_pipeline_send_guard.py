"""The pipeline's side of the send guard: consulted after the suppression lookup and before the
claim; a hold waits on the queue unclaimed; a released key goes past it once."""

from __future__ import annotations

from emailops.core.contract import parse_request
from emailops.core.dedupe import dedupe_key
from emailops.core.pipeline import Action
from emailops.core.retry import RetryState
from emailops.core.send_guard import Safeguard
from tests.core.test_pipeline import NOW, Stack, request_body
from tests.fakes import InMemoryRateCounters

TWO = request_body(
    recipients=[{"name": "", "email": "a@example.com"}, {"name": "", "email": "b@example.com"}],
    datasetName="D",
    reviewerName="R",
)


def guarded(**caps) -> tuple[Stack, InMemoryRateCounters]:
    stack, counters = Stack(), InMemoryRateCounters()
    stack.use(send_guard=Safeguard(counters=counters, loop_limit=0, **caps))
    return stack, counters


def test_over_the_cap_the_recipient_waits_unclaimed_until_the_window_ends():
    stack, _ = guarded(global_cap=1)
    outcome = stack.process(TWO)
    assert (outcome.action, outcome.sent) == (Action.WAIT, 1)
    assert outcome.wait_until == NOW - NOW % 60 + 60
    assert outcome.state.attempts == 0  # no retry budget used
    assert stack.row(TWO, "b@example.com") is None  # unclaimed: any consumer may take it later
    stack.clock.now = outcome.wait_until
    again = stack.process(TWO)
    assert (again.action, again.skipped, again.sent) == (Action.DELETE, 1, 1)


def test_a_counter_error_holds_every_recipient():
    stack, counters = guarded(global_cap=10)
    counters.down = True
    outcome = stack.process(TWO)
    assert (outcome.action, outcome.sent) == (Action.WAIT, 0)
    assert stack.sender.sent == []


def test_a_suppressed_recipient_is_not_counted():
    stack, counters = guarded(global_cap=10, message_cap=10)  # caps under 10: a send a call

    class Suppressed:
        def suppression_reason(self, address):
            return "hard bounce" if address == "a@example.com" else None

    stack.use(suppressions=Suppressed())
    stack.process(TWO)
    assert sum(counters.counts.values()) == 2  # b only: global and messageId


def test_a_released_key_goes_past_the_guard():
    stack, _ = guarded(global_cap=1)
    stack.process(request_body(datasetName="other", reviewerName="R"))  # the minute's one send
    body = request_body(datasetName="D", reviewerName="R")
    assert stack.process(body).action is Action.WAIT
    key = dedupe_key(parse_request(body), "alice@example.com")
    outcome = stack.process(body, state=RetryState(released=(key,)))
    assert (outcome.action, outcome.sent) == (Action.DELETE, 1)


def test_the_released_keys_travel_with_the_state():
    state = RetryState(released=("k1", "k2"))
    assert RetryState.from_json(state.to_json()).released == ("k1", "k2")
    assert "released" not in RetryState().to_json()
    assert RetryState.from_json(state.to_json()).redriven().released == ("k1", "k2")
