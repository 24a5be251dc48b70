"""The pipeline's vocabulary: what a record's outcome is (``Action``, ``RecordOutcome``), its
settings, the claims a record holds, one recipient's result, and the no-op collaborators of a
pipeline built without them (no tombstones, no send rate, no counters)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TypeVar

from emailops.core.errors import ConfigurationFault, DailyQuotaExceeded, EmailOpsError
from emailops.core.retry import RetryState

__all__ = [
    "Action",
    "HeldClaim",
    "HeldClaims",
    "NoStats",
    "NoTombstones",
    "PipelineSettings",
    "RecordOutcome",
    "Unpaced",
]

T = TypeVar("T")
R = TypeVar("R")


class Action(Enum):
    DELETE = "delete"  # every recipient is done: SENT, skipped, suppressed or refused as input
    RETRY = "retry"  # transient trouble: re-enqueue with back-off (uses the retry budget)
    WAIT = "wait"  # a live claim elsewhere, a configuration fault or the daily quota: look later
    DEAD_LETTER = "dead-letter"  # permanent trouble, or the retry budget ran out


@dataclass(frozen=True)
class RecordOutcome:
    action: Action
    reason: str = ""
    message_id: str = ""  # the request's messageId, when the body parsed
    wait_until: int = 0  # for WAIT: epoch seconds when to look again
    sent: int = 0
    skipped: int = 0
    state: RetryState = field(default_factory=RetryState)  # what the next attempt carries
    fault: str = ""  # a configuration fault's fix, for the consumer's health report
    rate_wait: float = 0.0  # seconds spent waiting for the shared send rate


@dataclass(frozen=True)
class PipelineSettings:
    from_address: str
    reply_to: tuple[str, ...] = ()
    lease_seconds: int = 30  # the queue's visibility timeout
    ttl_days: int = 90
    retry_max_seconds: int = 86_400  # transient trouble dead-letters only after this long
    fault_wait_seconds: int = 60  # how soon a record looks again after a configuration fault
    quota_wait_seconds: int = 600  # ... after SES's daily quota was reached
    mark_retry_delays: tuple[float, ...] = (0.2, 0.5, 1.0, 2.0)  # SENT mark retries while held
    throttle_retries: int = 3  # sends retried in place after SES throttling
    # A send starts only on a claim with at least this long left (else it is extended first).
    claim_send_margin_seconds: int = 5


@dataclass(frozen=True)
class HeldClaim:
    attempt: int
    until: float  # epoch seconds the claim's lease ends, as far as we know
    lost: bool = False  # the journal said it is no longer ours


class HeldClaims:
    """The claims one record holds right now, so the consumer's lease keeper can extend them, and
    whether the holder is letting go (a stop: no new send may start).

    Plain dict operations on immutable values, which are atomic in CPython: readers take a copy.
    """

    def __init__(self, stopping: Callable[[], bool] = lambda: False) -> None:
        self._claims: dict[str, HeldClaim] = {}
        self.stopping = stopping

    def hold(self, key: str, attempt: int, until: float = 0) -> None:
        self._claims[key] = HeldClaim(attempt, until)

    def extended(self, key: str, attempt: int, until: float) -> None:
        """The journal took ``until`` for this attempt's claim (ignored once released)."""
        held = self._claims.get(key)
        if held is not None and held.attempt == attempt and not held.lost:
            self._claims[key] = HeldClaim(attempt, max(held.until, until))

    def mark_lost(self, key: str, attempt: int) -> None:
        held = self._claims.get(key)
        if held is not None and held.attempt == attempt:
            self._claims[key] = HeldClaim(attempt, held.until, lost=True)

    def get(self, key: str) -> HeldClaim | None:
        return self._claims.get(key)

    def release(self, key: str) -> None:
        self._claims.pop(key, None)

    def snapshot(self) -> dict[str, int]:
        """Key → attempt of every claim still ours."""
        return {k: c.attempt for k, c in self._claims.copy().items() if not c.lost}

    def leases(self) -> dict[str, HeldClaim]:
        return {k: c for k, c in self._claims.copy().items() if not c.lost}


class _Kind(Enum):
    SENT = "sent"
    SKIPPED = "skipped"  # already SENT: a duplicate delivery
    SUPPRESSED = "suppressed"
    REFUSED = "refused"  # bad input for this recipient only: FAILED row, nothing to retry
    ACCEPTED = "accepted"  # SES accepted, the SENT mark is not stored yet
    TRANSIENT = "transient"
    FAULT = "fault"  # a configuration fault: wait for the fix
    QUOTA = "quota"  # the daily quota: wait
    WAIT = "wait"  # another consumer's live claim
    PERMANENT = "permanent"
    STOPPED = "stopped"  # the consumer is stopping: left for the record's next delivery


@dataclass(frozen=True)
class _Result:
    kind: _Kind
    key: str = ""
    detail: str = ""
    wait_until: int = 0
    provider_id: str = ""
    fix: str = ""
    rate_wait: float = 0.0
    counted: bool = False  # our conditional SENT mark made the change: count it once


class _NotNow(Exception):
    """Raised just before a send that must not start (see ``_ready_to_send``)."""

    def __init__(self, result: _Result) -> None:
        super().__init__(result.detail)
        self.result = result


class NoTombstones:
    """No address was ever erased: each is journaled by its own name (``Tombstones``)."""

    def erased_at(self, address: str) -> int | None:
        return None

    def name(self, address: str) -> str:
        return address

    def add(self, address: str, *, now: int) -> None:
        raise TypeError("no tombstone store: nothing can be erased through this pipeline")


class Unpaced:
    """No send rate to keep (``SendRateLimiter``): every slot at once."""

    def acquire(self) -> float:
        return 0.0

    def on_throttled(self) -> None:
        return None

    def on_daily_quota_exceeded(self) -> None:
        return None


class NoStats:
    """No reputation counters (``Stats``; STATS_TABLE empty): nothing is counted."""

    def add(
        self, *, message_id: str, organization: str | None, hour: str, counts: dict[str, int]
    ) -> None:
        return None

    def flush(self) -> None:
        return None


def sequential(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    return [fn(item) for item in items]


def _error_result(exc: EmailOpsError, key: str, now: int, settings: PipelineSettings) -> _Result:
    """The one place an exception's kind becomes a recipient's result."""
    if isinstance(exc, ConfigurationFault):
        return _Result(
            _Kind.FAULT,
            key,
            exc.describe(),
            wait_until=now + settings.fault_wait_seconds,
            fix=exc.fix,
        )
    if isinstance(exc, DailyQuotaExceeded):
        return _Result(
            _Kind.QUOTA, key, exc.describe(), wait_until=now + settings.quota_wait_seconds
        )
    return _Result(_Kind.PERMANENT if exc.permanent else _Kind.TRANSIENT, key, exc.describe())
