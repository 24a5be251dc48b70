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


# --- the recipient's stages side by side (``alongside``, the consumer's pool) --------------------


def backwards(first, second):
    """An ``alongside`` that answers the admission first: the answer must not depend on it."""
    then = second()
    return first(), then


def side_by_side(**caps) -> tuple[Stack, InMemoryRateCounters, Safeguard]:
    stack, counters = Stack(), InMemoryRateCounters()
    guard = Safeguard(counters=counters, loop_limit=0, **caps)
    stack.use(send_guard=guard)
    stack.pipeline.alongside = backwards
    return stack, counters, guard


def test_side_by_side_a_suppressed_recipient_gives_the_guards_count_back():
    stack, counters, guard = side_by_side(global_cap=10, message_cap=10)

    class Suppressed:
        def suppression_reason(self, address):
            return "hard bounce" if address == "a@example.com" else None

    stack.use(suppressions=Suppressed())
    outcome = stack.process(TWO)
    assert (outcome.action, outcome.sent) == (Action.DELETE, 1)
    assert stack.row(TWO, "a@example.com")["Status"] == "SUPPRESSED"
    guard.settle(NOW, everything=True)
    assert sum(counters.counts.values()) == 2  # b only: global and messageId


def test_side_by_side_a_suppression_store_that_cannot_answer_retries_and_gives_back():
    from emailops.core.errors import TransientError

    stack, counters, guard = side_by_side(global_cap=10, message_cap=10)

    class Down:
        def suppression_reason(self, address):
            raise TransientError("read suppression", key=address, reason="unreachable")

    stack.use(suppressions=Down())
    outcome = stack.process(TWO)
    assert outcome.action is Action.RETRY and stack.sender.sent == []
    guard.settle(NOW, everything=True)
    assert sum(counters.counts.values()) == 0  # nothing sent, nothing counted


def test_side_by_side_over_the_cap_still_holds_unclaimed():
    stack, _, _ = side_by_side(global_cap=1)
    outcome = stack.process(TWO)
    assert (outcome.action, outcome.sent) == (Action.WAIT, 1)
    assert stack.row(TWO, "b@example.com") is None
