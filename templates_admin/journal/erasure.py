"""Erasure of one recipient (a data-subject request): every journal row of the address, new and
Go-era, its unmatched delivery events and the API's read-audit entries naming it.

Its suppression entry, if any, is kept on purpose: it is what stops mail to that address, and
erasing it would let the next request send again. The console's own audit of staff reads
(channel console / email_log) is kept too: it records what people did, not the recipient's mail.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import asdict, dataclass

from emailops import container
from emailops.aws.erasure import RecipientRows
from emailops.core.events import EventLog
from templates_admin.journal.selectors import looks_like_email
from templates_admin.models import JournalReadAudit
from templates_admin.suppression.selectors import address_suppression

__all__ = ["ErasureReport", "recipient_erase", "recipient_erase_preview"]

logger = logging.getLogger("templates_admin.journal")


@dataclass(frozen=True)
class ErasureReport:
    address: str
    journal_rows: int  # written by this service
    go_journal_rows: int  # written by the Go consumer
    unmatched_events: int
    api_read_audits: int
    suppression_kept: str  # the kept suppression's reason, or "" when the address has none
    dry_run: bool = False

    def lines(self) -> list[str]:
        verb = "would remove" if self.dry_run else "removed"
        kept = (
            f"kept its suppression entry ({self.suppression_kept}): it is what stops mail to "
            "this address"
            if self.suppression_kept
            else "no suppression entry (nothing to keep)"
        )
        return [
            f"{verb} {self.journal_rows} journal row(s) written by emailops",
            f"{verb} {self.go_journal_rows} journal row(s) written by the Go consumer",
            f"{verb} {self.unmatched_events} unmatched delivery event(s)",
            f"{verb} {self.api_read_audits} API read-audit entry(ies) naming the address",
            kept,
        ]

    def as_result(self) -> dict:
        return asdict(self) | {"lines": self.lines()}


def _check(address: str) -> str:
    address = address.strip()
    if not looks_like_email(address):
        raise ValueError(f"{address!r} is not an email address")
    return address


def _api_audits(address: str):
    return JournalReadAudit.objects.filter(
        channel=JournalReadAudit.Channel.API, query__icontains=address
    )


def _report(address: str, *, dry_run: bool) -> tuple[ErasureReport, RecipientRows, list[str]]:
    eraser = container.current().recipient_eraser
    rows = eraser.journal_rows(address)
    events = eraser.unmatched_events(address)
    suppression = address_suppression(address=address)
    report = ErasureReport(
        address=address,
        journal_rows=len(rows.rows),
        go_journal_rows=len(rows.go_rows),
        unmatched_events=len(events),
        api_read_audits=_api_audits(address).count(),
        suppression_kept=(suppression.reason or "suppressed") if suppression else "",
        dry_run=dry_run,
    )
    return report, rows, events


def recipient_erase_preview(*, address: str) -> ErasureReport:
    """What ``recipient_erase`` would remove, removing nothing. Raises ValueError, EmailOpsError."""
    return _report(_check(address), dry_run=True)[0]


def recipient_erase(*, address: str, actor: str) -> ErasureReport:
    """Delete it all (see the module); safe to repeat. Raises ValueError or EmailOpsError (then
    run it again: what was deleted stays deleted). ``actor`` is who asked, for the log."""
    address = _check(address)
    report, rows, events = _report(address, dry_run=False)
    eraser = container.current().recipient_eraser
    eraser.delete(container.current().config.aws.journal_table, rows.all)
    if events:
        eraser.delete(container.current().config.events.unmatched_table, events)
    _api_audits(address).delete()
    # The log keeps who and how much, not the address itself (it would outlive the erasure).
    EventLog(logger).info(
        "recipient.erased",
        actor=actor,
        addressSha256=hashlib.sha256(address.lower().encode()).hexdigest()[:16],
        journalRows=report.journal_rows,
        goJournalRows=report.go_journal_rows,
        unmatchedEvents=report.unmatched_events,
        apiReadAudits=report.api_read_audits,
        suppressionKept=bool(report.suppression_kept),
    )
    return report
