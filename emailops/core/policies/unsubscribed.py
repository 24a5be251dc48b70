"""Did the recipient unsubscribe from this email's category?"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from emailops.core.log_only import LogOnlyReason
from emailops.core.preferences import PreferenceStore, may_be_refused, unsubscribed_detail
from emailops.core.send_policy import SEND, Ask, Stage, Verdict

__all__ = ["Unsubscribed"]


@dataclass(frozen=True)
class Unsubscribed:
    """Only categorised, non-critical mail may be refused; such a copy to a recipient who
    unsubscribed from its category is journaled log-only. The preference is read under the
    journal's name (an erased address's kept preferences live under its tombstone's)."""

    preferences: PreferenceStore

    stage = Stage.RECIPIENT

    def check(self, ask: Ask) -> Verdict:
        mapping = ask.composed.mapping
        if not may_be_refused(category=mapping.category, priority=mapping.priority):
            return SEND
        found = self.preferences.get(ask.name, mapping.category)
        if found is None or found.subscribed:
            return SEND
        when = datetime.fromtimestamp(found.at, UTC).strftime("%Y-%m-%d")
        return Verdict.log_only(LogOnlyReason.UNSUBSCRIBED, unsubscribed_detail(found, when))
