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

__all__ = ["STATE_ATTRIBUTE", "RetryPolicy", "RetryState", "backoff_seconds"]

STATE_ATTRIBUTE = "EmailOpsState"
_HISTORY = 5  # errors kept, newest last: enough to explain a dead letter, small enough for SQS


@dataclass(frozen=True)
class RetryState:
    first_attempt_at: int = 0  # epoch seconds of the first attempt that failed transiently
    attempts: int = 0  # transient failures so far (waits for a lease or a fix do not count)
    accepted: Mapping[str, str] = field(default_factory=dict)  # journal key → SES message id
    errors: tuple[str, ...] = ()
    # Set once a dead-letter move failed: the copy goes straight to the DLQ next time, and is never
    # refreshed (so SQS's own redrive ends it if the move keeps failing).
    dead_letter: str = ""
    # Journal keys a Support lead released from log-only (the console): the send guard lets
    # these through once; suppression and the service stop still apply.
    released: tuple[str, ...] = ()

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

    def redriven(self) -> RetryState:
        """After a redrive from the dead-letter queue: a fresh budget, the acceptances kept."""
        return RetryState(accepted=dict(self.accepted), released=self.released)

    def elapsed(self, now: int) -> int:
        return now - self.first_attempt_at if self.first_attempt_at else 0

    def to_json(self) -> str:
        data = {
            "firstAttemptAt": self.first_attempt_at,
            "attempts": self.attempts,
            "accepted": dict(self.accepted),
            "errors": list(self.errors),
        }
        if self.dead_letter:
            data["deadLetter"] = self.dead_letter
        if self.released:
            data["released"] = list(self.released)
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> RetryState:
        """Tolerant: a missing or mangled attribute is a fresh state (the journal still guards)."""
        return cls.parse(text)[0]

    @classmethod
    def parse(cls, text: str | None) -> tuple[RetryState, str]:
        """(state, why it was unreadable or ""). Producers can put anything in the attribute:
        Infinity, 1e999, nesting deeper than the parser's recursion, garbage; each is a fresh
        state, never an exception that could take a thread down."""
        if not text:
            return cls(), ""
        if len(text) > _MAX_STATE_CHARS:
            return cls(), f"{STATE_ATTRIBUTE} is {len(text)} characters (over {_MAX_STATE_CHARS})"
        try:
            data: Any = json.loads(text, parse_constant=_refuse_constant)
            accepted = {str(k): str(v) for k, v in dict(data.get("accepted") or {}).items()}
            state = cls(
                first_attempt_at=_whole(data.get("firstAttemptAt")),
                attempts=_whole(data.get("attempts")),
                accepted=accepted,
                errors=tuple(str(e)[:300] for e in list(data.get("errors") or ())[-_HISTORY:]),
                dead_letter=str(data.get("deadLetter") or "")[:4000],
                released=tuple(str(k) for k in list(data.get("released") or ())[:100]),
            )
        except Exception as exc:
            return cls(), f"{STATE_ATTRIBUTE} unreadable ({type(exc).__name__}): {text[:80]!r}"
        return state, ""


_MAX_STATE_CHARS = 200_000  # ours stay far below; a bigger one is not ours


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _whole(value: Any) -> int:
    """A non-negative whole number of reasonable size, or an error (1e999 is inf, inf is no int)."""
    number = int(value or 0)
    if not 0 <= number < 2**53:
        raise ValueError(f"{value!r} is out of range")
    return number


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


@dataclass(frozen=True)
class RetryPolicy:
    """The one retry rule for every queue: how long to back off, and when the budget is spent.

    ``backoff_*`` are RETRY_BACKOFF_BASE_SECONDS / RETRY_BACKOFF_CAP_SECONDS, ``max_seconds`` is
    RETRY_MAX_SECONDS (measured from the first failed attempt)."""

    backoff_base: int = 30
    backoff_cap: int = 900
    max_seconds: int = 86_400

    def delay(self, attempts: int, *, rng: Callable[[float, float], float] = random.uniform) -> int:
        return backoff_seconds(attempts, base=self.backoff_base, cap=self.backoff_cap, rng=rng)

    def exhausted(self, state: RetryState, now: int) -> bool:
        return state.elapsed(now) >= self.max_seconds

    def after_crash(self, state: RetryState, *, now: int, reason: str) -> tuple[RetryState, bool]:
        """A crash is retried like transient trouble, within the same budget: the next state,
        and whether the budget is now spent."""
        state = state.after_failure(now=now, started_at=now, error=reason, accepted=state.accepted)
        return state, self.exhausted(state, now)
