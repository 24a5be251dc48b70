"""What the send guard kept from being sent, for the console: requests held right now (the
rate safeguard's ``hold#`` records in the rate-counter table) and log-only rows by reason.

Held requests have no journal row yet (they wait on the queue, unclaimed, so that the Go consumer
and ours both still see them as new): the consumer keeps one small record per held request in
``email-rate-counter`` while it holds it (messageId, why, first held, held until, and its recipient
only hashed and masked), and this page lists those; a search by address finds its own through
``journal.address``. Log-only rows are journal rows, found by a bounded Scan.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from emailops.aws.rate_counter import HeldRequest
from emailops.core.journal_row import JournalRow
from emailops.core.log_only import LogOnlyReason

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = ["GuardView", "guard_view"]

REASONS = tuple(reason.value for reason in LogOnlyReason)


@dataclass(frozen=True)
class GuardView:
    held: list[HeldRequest]
    logged_only: list[JournalRow]
    reason: str
    complete: bool  # the Scan reached the end of the journal within its bound


def guard_view(*, adapters: Container, reason: str = "", max_read: int = 20_000) -> GuardView:
    """Held requests, and log-only rows (of ``reason`` when it is one of LogOnlyReason)."""
    reason = reason if reason in REASONS else ""
    counters = adapters.rate_counters
    held = counters.held(now=int(time.time())) if counters is not None else []
    page = adapters.journal_scan.logged_only_rows(reason=reason, max_read=max_read)
    rows = sorted(page.rows, key=lambda row: row.timestamp or 0, reverse=True)
    return GuardView(held=held, logged_only=rows, reason=reason, complete=page.next_key is None)
