"""Has someone pulled the console's emergency stop?"""

from __future__ import annotations

from dataclasses import dataclass

from emailops.core.log_only import LogOnlyReason
from emailops.core.ports import SendSwitch
from emailops.core.send_policy import SEND, Ask, Stage, Verdict

__all__ = ["EmergencyStop"]


@dataclass(frozen=True)
class EmergencyStop:
    """While the stop is on, each recipient is journaled log-only with the stop's reason."""

    switch: SendSwitch

    stage = Stage.RECIPIENT

    def check(self, ask: Ask) -> Verdict:
        why = self.switch.stop_reason()
        return (
            Verdict.log_only(LogOnlyReason.SERVICE_STOP, f"emergency stop: {why}") if why else SEND
        )
