"""The consumer's own state on a queue message (``EmailOpsState``), sealed so only we can write it.

Producers share the queue, and a message attribute is whatever the sender put there: a producer
could name its own request ``released`` (past the loop detector and the rate safeguard) or
``accepted`` (marked SENT, never sent). So every state we put on a message (a retry's copy, a
dead letter, the console's release and redrive) carries an HMAC-SHA256 over the message body and
the state, under a key derived from the server's secret, and a state whose seal does not verify is
no state at all: forged, copied from another message, or sealed under a key since retired.

Keys: the first signs, every one verifies (rotation: the old secret stays listed until the copies it
sealed are gone; a retry's copy lives at most the retry budget, a dead letter the DLQ's retention).
The seal is the last member of the JSON, so a consumer that predates it still reads the state.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Sequence
from typing import NamedTuple

from emailops.core.retry import STATE_ATTRIBUTE, RetryState

__all__ = ["SEAL_FIELD", "Opened", "StateSeal"]

SEAL_FIELD = "seal"
_PURPOSE = b"emailops.queue-state.v1"  # a key of its own: no other signature of the secret fits


def _derived(secret: str | bytes) -> bytes:
    raw = secret.encode() if isinstance(secret, str) else secret
    return hmac.new(raw, _PURPOSE, hashlib.sha256).digest()


class Opened(NamedTuple):
    state: RetryState  # fresh unless the attribute was ours
    problem: str = ""  # why the attribute was not used ("" when it was, or there was none)
    refused: bool = False  # readable, but not sealed by us for this message


class StateSeal:
    """Seals and opens ``RetryState`` attributes under ``secrets`` (the first signs)."""

    def __init__(self, secrets: Sequence[str | bytes]) -> None:
        keys = [_derived(s) for s in secrets if s]
        if not keys:
            raise ValueError("a state seal needs a secret")
        self._keys = keys

    def seal(self, state: RetryState, body: str) -> str:
        """The attribute text for ``state`` on a message whose body is ``body``."""
        text = state.to_json()
        mac = self._mac(self._keys[0], body, text)
        return f'{text[:-1]},"{SEAL_FIELD}":"{mac}"}}'

    def open(self, text: str | None, body: str) -> Opened:
        """The state, fresh unless we sealed ``text`` for this ``body``. No attribute is a fresh
        state and no problem."""
        if not text:
            return Opened(RetryState())
        state, problem = RetryState.parse(text)
        if problem:
            return Opened(state, problem)
        # Parsed once already, so a second parse cannot fail on size, depth or constants.
        given = json.loads(text).get(SEAL_FIELD)
        if not isinstance(given, str):
            return Opened(RetryState(), f"{STATE_ATTRIBUTE} is not sealed by this service", True)
        # Over the state as we read it: what is verified is exactly what is used.
        canonical = state.to_json()
        for key in self._keys:
            if hmac.compare_digest(self._mac(key, body, canonical), given):
                return Opened(state)
        why = "its seal does not verify (forged, from another message, or under a retired key)"
        return Opened(RetryState(), f"{STATE_ATTRIBUTE}: {why}", True)

    @staticmethod
    def _mac(key: bytes, body: str, text: str) -> str:
        mac = hmac.new(
            key, hashlib.sha256(body.encode("utf-8", "surrogatepass")).digest(), "sha256"
        )
        mac.update(text.encode("utf-8", "surrogatepass"))
        return mac.hexdigest()
