"""Is sending off for the whole service (SEND_ENABLED=false, as in Go)? In the list only then."""

from __future__ import annotations

from dataclasses import dataclass

from emailops.core.log_only import LogOnlyReason
from emailops.core.send_policy import Ask, Stage, Verdict

__all__ = ["ServiceStop"]

STOPPED = Verdict.log_only(LogOnlyReason.SERVICE_STOP, "SEND_ENABLED is false")


@dataclass(frozen=True)
class ServiceStop:
    """Every recipient journaled log-only."""

    stage = Stage.RECIPIENT

    def check(self, ask: Ask) -> Verdict:
        return STOPPED
