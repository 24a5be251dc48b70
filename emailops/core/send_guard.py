"""The send guard: the rate safeguard (shared with the Go consumer) and the loop detector.

Consulted per recipient after the suppression lookup and before the claim (the Go consumer's
order). The counts live in the ``email-rate-counter`` table (``RateCounters``, an adapter):

- **Rate safeguard**, exactly the Go consumer's counters: a fixed one-minute window,
  ``Bucket`` = ``<key>#<window start>`` with keys ``global`` and ``msg#<messageId>``; the global
  counter first, and a denied global check does not count the messageId. Beyond Go, over a cap
  the request is *held* (it waits on the queue, unclaimed, until the window ends), up to
  ``hold_max_seconds`` since its first hold, then log-only. ``over_cap="log-only"`` is Go's
  behaviour (log-only at once). A counter error holds the request: nothing is sent past a cap
  and nothing is dropped (Go makes it log-only).
- **Loop detector**: the same (recipient, messageId) with more than ``loop_limit`` different
  requests (dedupe keys) in one clock hour is a loop, whatever the context: further copies are
  log-only. The first copy over the limit in that hour names the producer in one ERROR line and
  one alert. Counted per distinct dedupe key, so a redelivery or a held copy coming back is not
  a new copy. The address and the key are stored only as hashes.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple, Protocol

from emailops.core.contract import address_key, masked_address
from emailops.core.errors import EmailOpsError
from emailops.core.events import EventLog
from emailops.core.log_only import LogOnlyReason
from emailops.core.rate_allowance import BLOCK_MOST, RateAllowance

__all__ = [
    "LOOP_WINDOW_SECONDS",
    "RATE_WINDOW_SECONDS",
    "GuardVerdict",
    "HeldRecipient",
    "LoopCount",
    "OverCap",
    "RateCounters",
    "Safeguard",
    "Verdict",
    "global_bucket",
    "loop_bucket",
    "message_bucket",
    "recipient_digest",
    "window_start",
]

logger = logging.getLogger("emailops.send_guard")

RATE_WINDOW_SECONDS = 60  # fixed, as in Go
LOOP_WINDOW_SECONDS = 3600


class OverCap(Enum):
    HOLD = "hold"
    LOG_ONLY = "log-only"


class Verdict(Enum):
    ALLOW = "allow"
    HOLD = "hold"  # wait on the queue, unclaimed, until ``until``
    LOG_ONLY = "log-only"  # journal it as log-only with ``reason``


@dataclass(frozen=True)
class GuardVerdict:
    verdict: Verdict
    until: int = 0  # HOLD: epoch seconds to look again
    reason: LogOnlyReason | None = None  # LOG_ONLY
    detail: str = ""
    counted: tuple[str, ...] = ()  # ALLOW: the rate buckets this check added one to


ALLOW = GuardVerdict(Verdict.ALLOW)


@dataclass(frozen=True)
class LoopCount:
    within: bool  # this copy is one of the first ``limit`` of the hour (or already was)
    over: int = 0  # copies over the limit so far this hour, this one included (when not within)


class RateCounters(Protocol):
    """The ``email-rate-counter`` table (shared with the Go consumer)."""

    def increment(self, bucket: str, *, expires_at: int, by: int = 1) -> int:
        """``ADD Count by`` (ExpiresAt set on the first count): the new count."""
        ...

    def reserve(self, bucket: str, n: int, *, cap: int, expires_at: int) -> int:
        """Add up to ``n`` without taking the count over ``cap``: how many were added."""
        ...

    def note_copy(self, bucket: str, member: str, *, limit: int, expires_at: int) -> LoopCount:
        """Add ``member`` to the bucket's set unless it holds ``limit`` others already."""
        ...

    def note_hold(
        self,
        bucket: str,
        *,
        message_id: str,
        why: str,
        now: int,
        until: int,
        expires_at: int,
        recipient: HeldRecipient | None = None,
    ) -> int:
        """Record (or renew) a held request, for the console: when it was first held."""
        ...

    def forget_hold(self, bucket: str) -> None: ...


def window_start(now: float, seconds: int = RATE_WINDOW_SECONDS) -> int:
    whole = int(now)
    return whole - whole % seconds


def global_bucket(start: int) -> str:
    return f"global#{start}"


def message_bucket(message_id: str, start: int) -> str:
    return f"msg#{message_id}#{start}"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def loop_bucket(message_id: str, recipient: str, hour_start: int) -> str:
    """One (messageId, recipient) per hour; the address only as a hash of its address_key."""
    return f"loop#{message_id}#{recipient_digest(recipient)}#{hour_start}"


def hold_bucket(key: str) -> str:
    return f"hold#{_digest(key)}"


def recipient_digest(address: str) -> str:
    """The address as the guard's records hold it: a hash of its ``address_key`` (any spelling
    of one address gives the same), so that the console can find a held request by recipient."""
    return _digest(address_key(address))


@dataclass(frozen=True)
class HeldRecipient:
    """Who a held request is for, as its hold record keeps it: the hash to find it by, and the
    address masked (``d***@example.com``) to show; never the address itself."""

    digest: str
    masked: str

    @classmethod
    def of(cls, address: str) -> HeldRecipient:
        return cls(recipient_digest(address), masked_address(address))


class HeldRequestOf(NamedTuple):
    message_id: str
    recipient: str
    key: str


@dataclass(eq=False, kw_only=True)
class Safeguard:
    """The ``SendGuard`` the pipeline consults (``check``); caps of 0 disable a check."""

    counters: RateCounters
    global_cap: int = 300  # SEND_RATE_LIMIT_PER_MINUTE
    message_cap: int = 120  # PER_MESSAGE_RATE_LIMIT_PER_MINUTE
    over_cap: OverCap = OverCap.HOLD  # RATE_SAFEGUARD_OVER_CAP
    hold_max_seconds: int = 3600  # RATE_SAFEGUARD_HOLD_MAX_SECONDS
    loop_limit: int = 5  # LOOP_LIMIT_PER_HOUR; 0: no loop detector
    alert: Callable[[str], None] = lambda text: None
    # Sends reserved in blocks (emailops.core.rate_allowance): ``lock`` guards this process's
    # share when threads use one guard; ``block_most`` caps a block (1: a call per send).
    lock: AbstractContextManager = field(default_factory=nullcontext)
    block_most: int = BLOCK_MOST
    allowance: RateAllowance = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.allowance = RateAllowance(counters=self.counters, lock=self.lock, most=self.block_most)

    def check(self, *, message_id: str, recipient: str, key: str, now: float) -> GuardVerdict:
        log = EventLog(logger, messageId=message_id, recipient=recipient, key=key)
        verdict = self._loop(message_id, recipient, key, now, log)
        if verdict.verdict is Verdict.ALLOW:
            verdict = self._rate(message_id, recipient, key, now, log)
        return verdict

    def refund(self, verdict: GuardVerdict, *, now: float) -> None:
        """Take back the counts of an allowed check whose recipient was not sent after all (its
        row was already SENT, or another consumer holds it). Without this, a record held for
        some recipients would count the ones already sent each time it came back, and a request
        with more recipients than the cap would never get past it."""
        for bucket in verdict.counted:
            self.allowance.give_back(bucket)

    def settle(self, now: float, *, everything: bool = False) -> None:
        """Give back to the shared counters the reserved sends of ended windows left unspent
        (``everything``: of the current window too, as the process stops)."""
        self.allowance.settle(now, everything=everything)

    # --- the loop detector -------------------------------------------------------------------

    def _loop(
        self, message_id: str, recipient: str, key: str, now: float, log: EventLog
    ) -> GuardVerdict:
        if self.loop_limit <= 0:
            return ALLOW
        hour = window_start(now, LOOP_WINDOW_SECONDS)
        try:
            counted = self.counters.note_copy(
                loop_bucket(message_id, recipient, hour),
                _digest(key),
                limit=self.loop_limit,
                expires_at=hour + 2 * LOOP_WINDOW_SECONDS,
            )
        except EmailOpsError as exc:  # the rate check still guards; a loop costs no hold
            log.error("loop.check_failed", error=exc.describe())
            return ALLOW
        if counted.within:
            return ALLOW
        detail = (
            f"loop: more than {self.loop_limit} requests for messageId {message_id} to this "
            "recipient within the hour"
        )
        if counted.over == 1:  # the first copy over the limit: one line, one alert per episode
            log.error(
                "loop.detected",
                producer=message_id,
                limitPerHour=self.loop_limit,
                consequence="further copies this hour are log-only",
            )
            self._alert(
                f"emailops: messageId {message_id} looks like a producer loop: more than "
                f"{self.loop_limit} different requests to one recipient within the hour; "
                "further copies are journaled log-only (not sent). Release them from the "
                "console once the producer is fixed.",
                log,
            )
        return GuardVerdict(Verdict.LOG_ONLY, reason=LogOnlyReason.LOOP, detail=detail)

    def _alert(self, text: str, log: EventLog) -> None:
        try:
            self.alert(text)
        except Exception as exc:  # an alert lost costs the alert, never the verdict
            log.warning("loop.alert_failed", error=f"{type(exc).__name__}: {exc}")

    # --- the rate safeguard ------------------------------------------------------------------

    def _rate(
        self, message_id: str, recipient: str, key: str, now: float, log: EventLog
    ) -> GuardVerdict:
        start = window_start(now)
        expires_at = int(now) + 2 * RATE_WINDOW_SECONDS
        checks = [(global_bucket(start), self.global_cap)]
        checks.append((message_bucket(message_id, start), self.message_cap))
        counted: list[str] = []
        for bucket, cap in checks:
            if cap <= 0:
                continue
            try:
                allowed = self.allowance.take(
                    bucket,
                    cap=cap,
                    now=now,
                    window_end=start + RATE_WINDOW_SECONDS,
                    expires_at=expires_at,
                )
            except EmailOpsError as exc:
                for taken in counted:  # the global send taken: not spent
                    self.allowance.give_back(taken)
                log.error(
                    "rate limit check failed; holding the request",
                    bucket=bucket,
                    error=exc.describe(),
                )
                until = start + RATE_WINDOW_SECONDS
                return GuardVerdict(
                    Verdict.HOLD, until=until, detail=f"rate counter unavailable: {exc.describe()}"
                )
            if not allowed:
                for taken in counted:  # the global send taken: not spent on a held request
                    self.allowance.give_back(taken)
                counter = bucket.rsplit("#", 1)[0]
                log.warning("rate limit exceeded", rateKey=counter, limitPerMinute=cap)
                held = HeldRequestOf(message_id, recipient, key)
                return self._over_cap(held, counter, cap, start, int(now), log)
            counted.append(bucket)
        return GuardVerdict(Verdict.ALLOW, counted=tuple(counted)) if counted else ALLOW

    def _over_cap(
        self,
        held: HeldRequestOf,
        counter: str,
        cap: int,
        start: int,
        now: int,
        log: EventLog,
    ) -> GuardVerdict:
        why = f"rate safeguard: over {cap} per minute ({counter})"
        if self.over_cap is OverCap.LOG_ONLY:
            return GuardVerdict(Verdict.LOG_ONLY, reason=LogOnlyReason.RATE_SAFEGUARD, detail=why)
        until = start + RATE_WINDOW_SECONDS
        bucket = hold_bucket(held.key)
        try:
            first = self.counters.note_hold(
                bucket,
                message_id=held.message_id,
                why=why,
                now=now,
                until=until,
                expires_at=until + 2 * RATE_WINDOW_SECONDS,
                recipient=HeldRecipient.of(held.recipient),
            )
        except EmailOpsError as exc:  # held without a budget: never dropped
            log.warning("rate.hold_not_recorded", error=exc.describe())
            first = now
        held_for = now - first
        if held_for >= self.hold_max_seconds:
            try:
                self.counters.forget_hold(bucket)
            except EmailOpsError as exc:  # it expires by itself
                log.warning("rate.hold_not_forgotten", error=exc.describe())
            detail = f"{why}; held {held_for} s (RATE_SAFEGUARD_HOLD_MAX_SECONDS)"
            log.warning("rate.hold_budget_spent", heldSeconds=held_for)
            return GuardVerdict(
                Verdict.LOG_ONLY, reason=LogOnlyReason.RATE_SAFEGUARD, detail=detail
            )
        log.info("rate.held", rateKey=counter, until=until, heldSeconds=held_for)
        return GuardVerdict(Verdict.HOLD, until=until, detail=f"held: {why}")
