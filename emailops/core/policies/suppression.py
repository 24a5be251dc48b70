"""Is the address on the suppression list (a hard bounce, a complaint, a console entry)?"""

from __future__ import annotations

from dataclasses import dataclass

from emailops.core.ports import SuppressionList
from emailops.core.send_policy import SEND, Ask, Stage, Verdict

__all__ = ["Suppression"]


@dataclass(frozen=True)
class Suppression:
    """A suppressed address gets a SUPPRESSED row with the list's reason. Asked by the address
    as the request gives it (the list knows no tombstone names)."""

    suppressions: SuppressionList

    stage = Stage.RECIPIENT

    def check(self, ask: Ask) -> Verdict:
        reason = self.suppressions.suppression_reason(ask.recipient.email)
        return Verdict.suppressed(reason) if reason else SEND
