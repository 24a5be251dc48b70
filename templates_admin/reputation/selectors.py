"""Stand-in with the contract's names (docs: /work/briefs/issue17-contract.md); the guard's branch
replaces this file with the real reads of the counters, SES and the pauses."""

from __future__ import annotations

from typing import Any


def reputation_summary(*, window_hours: int | None = None) -> dict[str, Any]:
    figures = {
        "sent": 0,
        "delivered": 0,
        "bounced": 0,
        "complained": 0,
        "bounce_rate": 0.0,
        "complaint_rate": 0.0,
        "state": "low_volume",
    }
    return {"account": figures, "message_ids": {}, "organizations": {}, "paused": []}


def hourly_counts(*, scope: str = "account", days: int = 7) -> list[Any]:
    return []


def ses_account_view() -> dict[str, Any]:
    return {}


def pauses() -> list[dict[str, Any]]:
    return []
