"""Does the reputation guard hold this kind of mail back, or slow it? Asked once per record."""

from __future__ import annotations

from dataclasses import dataclass

from emailops.core.ports import ReputationGate, SendRateLimiter
from emailops.core.reputation import GateDecision
from emailops.core.send_policy import SEND, Ask, Kind, Stage, Verdict

__all__ = ["ReputationPause"]


@dataclass(frozen=True)
class ReputationPause:
    """PAUSE holds every recipient not yet sent, unclaimed, for ``pause_wait_seconds``; SLOW
    sends taking a slot of ``slow`` (the guard's reduced rate) before the send rate's. A gate
    that fails lets mail go: the guard must never stop mail by failing."""

    gate: ReputationGate
    slow: SendRateLimiter
    pause_wait_seconds: int = 60

    stage = Stage.RECORD

    def check(self, ask: Ask) -> Verdict:
        priority = ask.composed.mapping.priority
        try:
            decision, why = self.gate.decide(
                priority=priority, organization=ask.request.organization_id
            )
        except Exception as exc:
            ask.log.warning("reputation.gate_failed", error=f"{type(exc).__name__}: {exc}")
            return SEND
        if decision is GateDecision.GO:
            return SEND
        ask.log.info("reputation.held", decision=decision.value, priority=priority, reason=why)
        if decision is GateDecision.PAUSE:
            until = int(ask.clock()) + self.pause_wait_seconds
            return Verdict.hold(until, f"paused: {why}")
        return Verdict(Kind.SEND, pace=(self.slow,)) if decision is GateDecision.SLOW else SEND
