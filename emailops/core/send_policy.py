"""The send policies' shared vocabulary: what a policy is asked (``Ask``), what it answers
(``Verdict``), and where in the pipeline's fixed sequence it is asked (``Stage``).

A policy answers one question for one recipient (or, at the record stage, for the whole record):
send, log-only (with its reason), hold (until when), or suppressed. It only answers: the pipeline
journals what the answer means. A policy that is off is not in the pipeline's list at all; the
list and its order are composed once (``emailops.pipeline_build.send_policies``, docs/pipeline.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol, TypeVar, runtime_checkable

from emailops.core.compose import Composed
from emailops.core.contract import EmailRequest, Recipient
from emailops.core.events import EventLog
from emailops.core.log_only import LogOnlyReason
from emailops.core.ports import SendRateLimiter
from emailops.core.retry import RetryState

__all__ = [
    "SEND",
    "Alongside",
    "Ask",
    "HoldsCounts",
    "Kind",
    "SendPolicy",
    "Stage",
    "Staged",
    "Verdict",
    "ask_each",
    "both_verdicts",
    "in_turn",
]

A = TypeVar("A")
B = TypeVar("B")
# Two calls run side by side, both answered (the core has no threads: a pool is handed in).
Alongside = Callable[[Callable[[], A], Callable[[], B]], tuple[A, B]]


def in_turn(first: Callable[[], A], second: Callable[[], B]) -> tuple[A, B]:
    """``Alongside`` with no pool: one after the other."""
    return first(), second()


class Stage(Enum):
    """Where a policy is asked; the pipeline asks the stages in this order, and within one stage
    the policies in the list's order, stopping at the first that does not answer SEND."""

    RECORD = 1  # once per record, after the render: its answer holds for every recipient
    RECIPIENT = 2  # per recipient, before its copy is made
    # Per recipient, last, after the copy: a policy that takes a slot of a budget, given back
    # (the verdict's ``undo``) when the claim then turns out not to be ours.
    ADMISSION = 3


class Kind(Enum):
    SEND = "send"
    LOG_ONLY = "log-only"  # journaled SENT + LoggedOnly with ``reason``, never sent
    SUPPRESSED = "suppressed"  # journaled SUPPRESSED with ``detail`` as the reason, never sent
    HOLD = "hold"  # waits on the queue unclaimed until ``until``: no row, no retry budget used


def _nothing() -> None:
    return None


@dataclass(frozen=True, slots=True)
class Verdict:
    kind: Kind
    detail: str = ""  # the journal's words (log-only, suppressed), or why it holds
    reason: LogOnlyReason = LogOnlyReason.SERVICE_STOP  # LOG_ONLY: the stored LoggedOnlyReason
    until: int = 0  # HOLD: epoch seconds to look again
    loud: bool = False  # LOG_ONLY: logged as a WARNING (a safeguard acted), not INFO
    pace: tuple[SendRateLimiter, ...] = ()  # SEND: a slot of each is taken before the send rate's
    undo: Callable[[], None] = field(default=_nothing)  # SEND: the claim was not ours after all

    @classmethod
    def log_only(cls, reason: LogOnlyReason, detail: str, *, loud: bool = False) -> Verdict:
        return cls(Kind.LOG_ONLY, detail, reason=reason, loud=loud)

    @classmethod
    def suppressed(cls, reason: str) -> Verdict:
        return cls(Kind.SUPPRESSED, reason)

    @classmethod
    def hold(cls, until: int, detail: str) -> Verdict:
        return cls(Kind.HOLD, detail, until=until)


SEND = Verdict(Kind.SEND)


WHOLE_RECORD = Recipient(email="")  # who the record stage asks about: no one recipient


@dataclass(frozen=True, slots=True)
class Ask:
    """One record's request and render and, but at the record stage, one recipient of it.
    ``clock`` is the pipeline's, so every answer is dated as the pipeline dates its rows."""

    request: EmailRequest
    composed: Composed
    log: EventLog
    clock: Callable[[], float]
    recipient: Recipient = WHOLE_RECORD  # the address as the request gives it
    name: str = ""  # as the journal names it: an erased address by its tombstone's name
    key: str = ""  # the recipient's journal key
    state: RetryState = field(default_factory=RetryState)


class SendPolicy(Protocol):
    stage: Stage

    def check(self, ask: Ask) -> Verdict:
        """The answer for ``ask``. A store that cannot answer raises its EmailOpsError: the
        recipient is tried again later, never sent unchecked. A record-stage policy never
        raises (it cannot stop mail by failing)."""
        ...


@runtime_checkable
class HoldsCounts(Protocol):
    """A policy holding counts of a shared budget it reserved ahead (the send guard's blocks):
    the pipeline's ``flush_counters`` lets it give back what it did not spend."""

    def settle(self, now: float, *, everything: bool = False) -> None: ...


@dataclass(frozen=True, slots=True)
class Staged:
    """A chain split by stage, each part in the chain's order."""

    policies: Sequence[SendPolicy] = ()
    record: tuple[SendPolicy, ...] = ()
    recipient: tuple[SendPolicy, ...] = ()
    admission: tuple[SendPolicy, ...] = ()

    @classmethod
    def of(cls, policies: Sequence[SendPolicy]) -> Staged:
        def at(stage: Stage) -> tuple[SendPolicy, ...]:
            return tuple(p for p in policies if p.stage is stage)

        return cls(policies, at(Stage.RECORD), at(Stage.RECIPIENT), at(Stage.ADMISSION))


def ask_each(policies: Iterable[SendPolicy], ask: Ask, allowed: Verdict = SEND) -> Verdict:
    """Ask ``policies`` in turn, going on from ``allowed`` (an earlier stage's SEND, or its
    refusal, which stands): the first answer that is not SEND, or a SEND that carries every
    answer's ``pace`` and ``undo``. A refusal gives back what the SENDs before it took."""
    if allowed.kind is not Kind.SEND:
        return allowed
    for policy in policies:
        verdict = policy.check(ask)
        if verdict.kind is not Kind.SEND:
            allowed.undo()
            return verdict
        if verdict is not SEND:
            allowed = _both(allowed, verdict)
    return allowed


def both_verdicts(first: Verdict, then: Verdict) -> Verdict:
    """Two SENDs as one: both paces, both undos."""
    return _both(first, then)


def _both(first: Verdict, then: Verdict) -> Verdict:
    if first is SEND:
        return then

    def undo() -> None:
        first.undo()
        then.undo()

    return Verdict(Kind.SEND, pace=first.pace + then.pace, undo=undo)
