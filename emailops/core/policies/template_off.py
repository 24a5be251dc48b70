"""Is this email's template switched off (``SendDisabled`` on its mapping, as in Go)?"""

from __future__ import annotations

from dataclasses import dataclass

from emailops.core.log_only import LogOnlyReason
from emailops.core.send_policy import SEND, Ask, Stage, Verdict

__all__ = ["TemplateOff"]


@dataclass(frozen=True)
class TemplateOff:
    """A switched-off mapping's recipients are journaled log-only."""

    stage = Stage.RECIPIENT

    def check(self, ask: Ask) -> Verdict:
        mapping = ask.composed.mapping
        if not mapping.send_disabled:
            return SEND
        return Verdict.log_only(LogOnlyReason.TEMPLATE_OFF, f"SendDisabled on {mapping.message_id}")
