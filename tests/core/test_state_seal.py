"""The seal on the consumer's queue state: only a state we sealed, for that message's body, under a
key we hold, is read; anything else is a fresh state, said why."""

from __future__ import annotations

import json

import pytest

from emailops.core.retry import RetryState
from emailops.core.state_seal import StateSeal

STATE = RetryState(
    first_attempt_at=5, attempts=2, accepted={"k": "ses"}, errors=("é 503",), released=("r",)
)
SEAL = StateSeal(["server-secret"])


def test_a_sealed_state_opens_for_its_body_and_old_readers_still_parse_it():
    text = SEAL.seal(STATE, "body")
    assert SEAL.open(text, "body") == (STATE, "", False)
    assert RetryState.from_json(text) == STATE  # a consumer from before the seal


@pytest.mark.parametrize(
    "tamper",
    [
        lambda d: d | {"released": ["other"]},
        lambda d: d | {"accepted": {"k": "forged"}},
        lambda d: {k: v for k, v in d.items() if k != "seal"},
        lambda d: d | {"seal": "0" * 64},
        lambda d: d | {"seal": 5},
    ],
)
def test_a_changed_or_unsealed_state_is_a_fresh_state(tamper):
    text = json.dumps(tamper(json.loads(SEAL.seal(STATE, "body"))))
    opened = SEAL.open(text, "body")
    assert opened.state == RetryState() and opened.refused and opened.problem


def test_another_body_or_key_is_refused_and_no_attribute_is_no_problem():
    text = SEAL.seal(STATE, "body")
    assert SEAL.open(text, "another").refused
    assert StateSeal(["another-secret"]).open(text, "body").refused
    assert StateSeal(["another-secret", "server-secret"]).open(text, "body").state == STATE
    assert SEAL.open(None, "body") == (RetryState(), "", False)
    assert not SEAL.open("1e999", "body").refused  # unreadable, not forged


def test_a_seal_needs_a_secret():
    with pytest.raises(ValueError):
        StateSeal(["", ""])
