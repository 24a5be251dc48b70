"""What a record carries from one attempt to the next, and the retry budget.

A retried record is re-enqueued as a fresh copy (see the consumer) rather than left for SQS to
redeliver, so the queue's ``maxReceiveCount`` never decides when we give up: the copy carries this
state in one message attribute, and the budget (``RETRY_MAX_SECONDS`` since the first attempt) does.

``accepted`` is the durable half of the send→mark window: recipients SES accepted whose SENT mark
could not be stored. A later attempt marks them instead of sending again.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["STATE_ATTRIBUTE", "RetryState", "backoff_seconds"]

STATE_ATTRIBUTE = "EmailOpsState"
_HISTORY = 5  # errors kept, newest last: enough to explain a dead letter, small enough for SQS


@dataclass(frozen=True)
class RetryState:
    first_attempt_at: int = 0  # epoch seconds of the first attempt that failed transiently
    attempts: int = 0  # transient failures so far (waits for a lease or a fix do not count)
    accepted: Mapping[str, str] = field(default_factory=dict)  # journal key → SES message id
    errors: tuple[str, ...] = ()

    def after_failure(
        self, *, now: int, started_at: int, error: str, accepted: Mapping[str, str]
    ) -> RetryState:
        return replace(
            self,
            first_attempt_at=self.first_attempt_at or started_at or now,
            attempts=self.attempts + 1,
            accepted=dict(accepted),
            errors=(*self.errors, error[:300])[-_HISTORY:],
        )

    def with_accepted(self, accepted: Mapping[str, str]) -> RetryState:
        return replace(self, accepted=dict(accepted))

    def elapsed(self, now: int) -> int:
        return now - self.first_attempt_at if self.first_attempt_at else 0

    def to_json(self) -> str:
        return json.dumps(
            {
                "firstAttemptAt": self.first_attempt_at,
                "attempts": self.attempts,
                "accepted": dict(self.accepted),
                "errors": list(self.errors),
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | None) -> RetryState:
        """Tolerant: a missing or mangled attribute is a fresh state (the journal still guards)."""
        if not text:
            return cls()
        try:
            data: Any = json.loads(text)
            accepted = {str(k): str(v) for k, v in dict(data.get("accepted") or {}).items()}
            return cls(
                first_attempt_at=int(data.get("firstAttemptAt") or 0),
                attempts=int(data.get("attempts") or 0),
                accepted=accepted,
                errors=tuple(str(e) for e in data.get("errors") or ())[-_HISTORY:],
            )
        except (ValueError, TypeError, AttributeError):
            return cls()


def backoff_seconds(
    attempts: int,
    *,
    base: int,
    cap: int,
    rng: Callable[[float, float], float] = random.uniform,
) -> int:
    """Exponential back-off with jitter: between half and all of min(cap, base * 2**(n-1))."""
    ceiling = min(cap, base * 2 ** max(0, min(attempts, 64) - 1))
    return max(1, int(rng(ceiling / 2, ceiling)))
