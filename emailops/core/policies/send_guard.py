"""Is this send over the rate safeguard's caps, or one copy too many of a loop?"""

from __future__ import annotations

from dataclasses import dataclass

from emailops.core.ports import SendGuard
from emailops.core.send_guard import Verdict as GuardAnswer
from emailops.core.send_policy import SEND, Ask, Kind, Stage, Verdict

__all__ = ["SendGuardCheck"]


@dataclass(frozen=True)
class SendGuardCheck:
    """The guard (emailops.core.send_guard.Safeguard) counts the send as it allows it, so it is
    asked last, just before the claim as in Go; the count is given back when the claim turns out
    not to be ours. Over a cap: hold until the window ends (or log-only, as Go does); a loop:
    log-only. A key a Support lead released goes past it once."""

    guard: SendGuard

    stage = Stage.ADMISSION

    def check(self, ask: Ask) -> Verdict:
        if ask.key in ask.state.released:
            return SEND
        answer = self.guard.check(
            message_id=ask.request.message_id,
            recipient=ask.recipient.email,
            key=ask.key,
            now=ask.clock(),
        )
        if answer.verdict is GuardAnswer.HOLD:
            return Verdict.hold(answer.until, answer.detail)
        if answer.verdict is GuardAnswer.LOG_ONLY and answer.reason is not None:
            return Verdict.log_only(answer.reason, answer.detail, loud=True)
        return Verdict(Kind.SEND, undo=lambda: self.guard.refund(answer, now=ask.clock()))

    def settle(self, now: float, *, everything: bool = False) -> None:
        """Unspent reserved sends back to the shared counters (ended windows; all, stopping)."""
        self.guard.settle(now, everything=everything)
