"""Erasure of one recipient (a data-subject request): every journal row of the address, new and
Go-era, its unmatched delivery events (by the address's one spelling, ``address_key``: display
names and quoted local parts included) and the API's read-audit entries naming it; its webhook
deliveries rewritten with the address's erased name (``webhooks.erasure``: the payload a replay
sends, the event, the key, the attempts' errors); then the tombstone (a keyed hash and the time,
never the address), which every later write meets.

Its suppression entry, if any, is kept on purpose: it is what stops mail to that address, and
erasing it would let the next request send again. The console's own audit of staff reads
(channel console / email_log) is kept too: it records what people did, not the recipient's mail.
The dead-letter queue is the jobs area's part (``templates_admin.jobs.erasure``).

Its preferences (each category it unsubscribed from, docs/preferences.md) are removed too, unless
the request asks to keep them (``keep_preferences``: someone who wants their mail history gone
but not to start receiving newsletters again).
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

from django.db.models import Q

from audit.models import JournalReadAudit
from emailops.aws.erasure import RecipientRows
from emailops.core.contract import address_key, address_spellings
from emailops.core.erasure import masked_address
from emailops.core.events import EventLog
from templates_admin.categories import preference_store
from templates_admin.journal.selectors import looks_like_email
from templates_admin.suppression.selectors import address_suppression
from webhooks.erasure import deliveries_erase, deliveries_naming

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = ["ErasureReport", "recipient_erase", "recipient_erase_preview"]

logger = logging.getLogger("templates_admin.journal")


@dataclass(frozen=True)
class ErasureReport:
    address_masked: str  # d***@example.com: the report (a job's result) never holds the address
    journal_rows: int  # written by this service
    go_journal_rows: int  # written by the Go consumer
    unmatched_events: int
    api_read_audits: int
    suppression_kept: str  # the kept suppression's reason, or "" when the address has none
    dry_run: bool = False
    dead_letters_rewritten: int = 0  # the jobs area's part: messages kept without the address
    dead_letters_dropped: int = 0  # messages whose only recipient it was
    jobs_scrubbed: int = 0  # other jobs whose inputs, results or steps named it
    suppressed: bool = False  # "also suppress" added an entry
    preferences: int = 0  # the address's preferences removed (or, kept, how many there are)
    preferences_kept: bool = False  # "keep preferences" was asked
    webhook_deliveries: int = 0  # deliveries whose payloads named it, rewritten without it

    def lines(self) -> list[str]:
        verb = "would remove" if self.dry_run else "removed"
        if self.suppressed:
            kept = "added a suppression entry, as asked: no mail goes to this address again"
        elif self.suppression_kept:
            kept = (
                f"kept its suppression entry ({self.suppression_kept}): it is what stops mail to "
                "this address"
            )
        else:
            kept = "no suppression entry (nothing to keep)"
        lines = [
            f"{verb} {self.journal_rows} journal row(s) written by emailops",
            f"{verb} {self.go_journal_rows} journal row(s) written by the Go consumer",
            f"{verb} {self.unmatched_events} unmatched delivery event(s)",
            f"{verb} {self.api_read_audits} API read-audit entry(ies) naming the address",
            f"{'would rewrite' if self.dry_run else 'rewrote'} {self.webhook_deliveries} webhook "
            "delivery(ies) with the address's erased name (their payloads, replays included)",
        ]
        if not self.dry_run:
            lines += [
                f"rewrote {self.dead_letters_rewritten} dead-letter message(s) without the address"
                f" and dropped {self.dead_letters_dropped} whose only recipient it was",
                f"took the address out of {self.jobs_scrubbed} other job(s)",
                "kept a tombstone (a keyed hash of the address and the time, not the address)",
            ]
        if self.preferences_kept:
            lines.append(f"kept its {self.preferences} preference(s), as asked")
        else:
            lines.append(f"{verb} {self.preferences} preference(s) (categories unsubscribed from)")
        return [*lines, kept]

    def as_result(self) -> dict:
        return asdict(self) | {"lines": self.lines()}


def checked_address(address: str) -> str:
    """The address, trimmed; ValueError when it is not one."""
    address = address.strip()
    if not looks_like_email(address):
        raise ValueError("that is not an email address")
    return address


def _api_audits(address: str):
    match = Q()
    for spelling in address_spellings(address):  # icontains: capitals and display names too
        match |= Q(query__icontains=spelling)
    return JournalReadAudit.objects.filter(match, channel=JournalReadAudit.Channel.API)


def _preference_count(address: str, *, adapters: Container) -> int:
    store = preference_store(adapters)
    return len(store.of_address(address)) if store is not None else 0


def _report(
    address: str, *, adapters: Container, dry_run: bool, keep_preferences: bool = False
) -> tuple[ErasureReport, RecipientRows, list[str]]:
    eraser = adapters.recipient_eraser
    rows = eraser.journal_rows(address)
    events = eraser.unmatched_events(address)
    suppression = address_suppression(
        suppression_list=adapters.suppression_list, address=address_key(address)
    )
    report = ErasureReport(
        address_masked=masked_address(address),
        journal_rows=len(rows.rows),
        go_journal_rows=len(rows.go_rows),
        unmatched_events=len(events),
        api_read_audits=_api_audits(address).count(),
        webhook_deliveries=deliveries_naming(address, journal_keys=rows.all).count(),
        suppression_kept=(suppression.reason or "suppressed") if suppression else "",
        dry_run=dry_run,
        preferences=(
            _preference_count(address, adapters=adapters) if dry_run or keep_preferences else 0
        ),
        preferences_kept=keep_preferences,
    )
    return report, rows, events


def recipient_erase_preview(
    *, adapters: Container, address: str, keep_preferences: bool = False
) -> ErasureReport:
    """What ``recipient_erase`` would remove, removing nothing. Raises ValueError, EmailOpsError."""
    address = checked_address(address)
    return _report(address, adapters=adapters, dry_run=True, keep_preferences=keep_preferences)[0]


def recipient_erase(
    *, adapters: Container, address: str, actor: str, keep_preferences: bool = False
) -> ErasureReport:
    """Write the tombstone, then delete it all (see the module); safe to repeat. Raises
    ValueError or EmailOpsError (then run it again: what was deleted stays deleted). ``actor`` is
    who asked, for the log."""
    address = checked_address(address)
    # The tombstone first: an event landing while the rows are deleted already meets it.
    adapters.tombstones.add(address, now=int(time.time()))
    report, rows, events = _report(
        address, adapters=adapters, dry_run=False, keep_preferences=keep_preferences
    )
    eraser = adapters.recipient_eraser
    eraser.delete(adapters.config.aws.journal_table, rows.all)
    if events:
        eraser.delete(adapters.config.events.unmatched_table, events)
    _api_audits(address).delete()
    rewritten = deliveries_erase(
        address=address, name=adapters.tombstones.name(address), journal_keys=rows.all
    )
    report = replace(report, webhook_deliveries=rewritten)
    store = preference_store(adapters)
    if store is not None:
        if keep_preferences:  # kept under the tombstone's name: no address stays in the table
            kept = adapters.tombstones.name(address)
            for preference in store.of_address(address):
                store.set(replace(preference, address=kept))
            store.remove_address(address)
        else:
            report = replace(report, preferences=store.remove_address(address))
    # The log keeps who and how much, not the address itself (it would outlive the erasure).
    EventLog(logger).info(
        "recipient.erased",
        actor=actor,
        addressHash=adapters.tombstones.hash(address)[:16],
        journalRows=report.journal_rows,
        goJournalRows=report.go_journal_rows,
        unmatchedEvents=report.unmatched_events,
        apiReadAudits=report.api_read_audits,
        webhookDeliveries=report.webhook_deliveries,
        suppressionKept=bool(report.suppression_kept),
        preferences=report.preferences,
        preferencesKept=keep_preferences,
    )
    return report
