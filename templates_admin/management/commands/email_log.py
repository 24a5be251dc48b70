"""python manage.py email_log — the console's "did they get the email?" from the command line.

    email_log recipient EMAIL [--message-id ID] [--status S] [--delivery D] [--since D]
                              [--until D] [--limit N] [--oldest-first] [--json]
    email_log latest EMAIL [--message-id ID] [--json]
    email_log id ID [--json]        (a journal Id or an SES message id)

``recipient`` prints every row unless ``--limit`` says otherwise (as the Go service's email-log.sh
does), page by page as it reads them. The same selectors as the console; context values under
sensitive keys are masked here too. With ``--json`` each row also carries ``DeliveryOutcome``: the
delivery outcome in words, as the console shows it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from datetime import datetime, time
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from audit.models import JournalReadAudit
from audit.reads import read_record
from emailops import container
from emailops.core.errors import EmailOpsError
from emailops.core.journal_row import JournalRow
from emailops.core.stored_attributes import AttributeRole, StoredAttributes
from templates_admin.journal import delivery, no_result, presentation, selectors

_TABLE = (
    ("TIME", 23),
    ("STATUS", 14),
    ("DELIVERY", 40),
    ("MESSAGE ID", 30),
    ("SUBJECT / ERROR", 48),
    ("BRANDING", 9),
)

_FILTERS = ("message_id", "status", "delivery", "since", "until", "limit", "oldest_first")


def _moment(text: str, *, end_of_day: bool = False) -> datetime:
    """YYYY-MM-DD (a whole day) or an ISO datetime; without a zone, the console's TIME_ZONE."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a date (YYYY-MM-DD) or ISO time"
        ) from None
    if len(text) == 10 and end_of_day:
        moment = datetime.combine(moment.date(), time.max)
    if moment.tzinfo is None:
        moment = timezone.make_aware(moment)
    return moment


def _until(text: str) -> datetime:
    return _moment(text, end_of_day=True)


class Command(BaseCommand):
    help = "Search the email journal: every email to an address, the latest one, or one row."

    def add_arguments(self, parser):
        common = argparse.ArgumentParser(add_help=False)
        common.add_argument(
            "--json", action="store_true", help="one JSON object per row, keyed by attribute"
        )
        narrow = argparse.ArgumentParser(add_help=False)
        narrow.add_argument("--message-id", help="only this messageId")
        narrow.add_argument("--status", help="only QUEUED, SENT, FAILED or SUPPRESSED")

        commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
        recipient = commands.add_parser(
            "recipient", parents=[common, narrow], help="every email to an address, newest first"
        )
        recipient.add_argument("email")
        recipient.add_argument("--since", type=_moment, help="from this day or time")
        recipient.add_argument("--until", type=_until, help="up to this day or time")
        recipient.add_argument(
            "--delivery",
            help="only DELIVERED, BOUNCED, COMPLAINED, DELAYED, REJECTED, or NONE (no report yet)",
        )
        recipient.add_argument("--limit", type=int, help="at most N rows (default: every row)")
        recipient.add_argument("--oldest-first", action="store_true")
        latest = commands.add_parser(
            "latest", parents=[common, narrow], help="the latest email to an address, explained"
        )
        latest.add_argument("email")
        row = commands.add_parser(
            "id", parents=[common], help="one row by journal Id or SES message id, explained"
        )
        row.add_argument("id")

    def handle(self, *args, command: str, **options: Any) -> None:
        # Journal reads are audited; the command line's "who" is the OS user running it.
        read_record(
            channel=JournalReadAudit.Channel.CLI,
            action=command,
            query=options.get("id") or options.get("email") or "",
            filters={k: options.get(k) for k in _FILTERS},
        )
        self.adapters = container.current()  # the run's adapters, handed to every read below
        try:
            if command == "id":
                self._one(options["id"], options)
            else:
                self._recipient(command, options)
        except selectors.JournalSearchError as exc:
            raise CommandError(str(exc)) from None
        except EmailOpsError as exc:
            raise CommandError(f"the journal could not be read: {exc.describe()}") from None

    def _recipient(self, command: str, options: dict[str, Any]) -> None:
        email = options["email"].strip()
        if ":" in email or not selectors.looks_like_email(email):
            raise CommandError(f"{email!r} is not an email address")
        limit = 1 if command == "latest" else options["limit"]
        if limit is not None and limit < 1:
            raise CommandError("--limit must be at least 1")
        criteria = {
            "message_id": options["message_id"],
            "status": options["status"],
            "delivery": options.get("delivery"),
            "since": options.get("since"),
            "until": options.get("until"),
        }
        pages = selectors.journal_search_pages(
            adapters=self.adapters,
            query=email,
            max_rows=limit,
            oldest_first=options.get("oldest_first", False),
            **criteria,
        )
        arguments = {"query": email, **criteria}
        if command == "latest":
            last = None
            for last in pages:  # a filtered page may end its read budget before finding a row
                self._warn(last)
                if last.rows:
                    self._explain(last.rows[0], last.stored[0], options["json"])
                    return
            self._no_rows(f"no rows for {email}", last, options["json"], arguments)
            return
        # Written page by page: every row of a busy address need not fit in memory.
        count, calls, page = 0, 0, None
        for page in pages:
            self._warn(page)
            if options["json"]:
                self._json(page.rows, page.stored)
            else:
                if page.rows and not count:
                    self._header()
                self._lines(page.rows)
            count += len(page.rows)
            calls += page.calls
        if not count:
            self._no_rows(f"no rows for {email}", page, options["json"], arguments)
            return
        more = bool(page and page.next_cursor)
        if options["json"]:
            if more:  # stdout stays JSON lines; say on stderr that there is more
                self.stderr.write(f"{count} rows shown; more match: raise --limit")
            return
        tail = " (more: raise --limit)" if more else ""
        self.stdout.write(f"{count} row{'s' * (count != 1)}{tail}; {calls} DynamoDB calls")

    def _warn(self, result: selectors.JournalSearchResult) -> None:
        for problem in result.problems:
            self.stderr.write(f"warning: {problem}")

    def _one(self, key: str, options: dict[str, Any]) -> None:
        key = key.strip()
        if not key:
            raise CommandError("give a journal Id or an SES message id")
        if ":" not in key and selectors.looks_like_email(key):
            raise CommandError(f"{key!r} is an address: use `email_log recipient {key}`")
        result = selectors.journal_search(adapters=self.adapters, query=key)
        self._warn(result)
        if not result.rows:
            self._no_rows(f"no row has Id or SES message id {key}", result, options["json"])
        for row, stored in zip(result.rows, result.stored, strict=True):
            self._explain(row, stored, options["json"])

    def _no_rows(
        self,
        message: str,
        result: selectors.JournalSearchResult,
        as_json: bool,
        arguments: dict[str, Any] | None = None,
    ) -> None:
        runs = result.runs
        # With --json, stdout stays pure JSON lines (none); the message goes to stderr.
        out = self.stderr if as_json else self.stdout
        out.write(f"{message}. Searched: " + "; ".join(r.describe() for r in runs))
        reason = (
            no_result.journal_search_empty_reason(result, arguments, adapters=self.adapters)
            if arguments
            else None
        )
        if reason is not None and reason.why == no_result.Why.FILTERED:
            out.write(
                f"The filters hid {reason.hidden_text} to this address: run it again without "
                "--message-id, --status and --delivery to see them."
            )
        elif reason is not None and reason.why == no_result.Why.WINDOW:
            out.write(
                f"{reason.hidden_text} to this address lie outside --since/--until (oldest "
                f"{reason.oldest}, newest {reason.newest}): run it again without the dates."
            )
        elif reason is None and arguments and any(arguments[k] for k in arguments if k != "query"):
            out.write("No row matched the filters among the rows read.")
        else:
            out.write(
                "No row means the email was never queued (check the producer and the dead-letter "
                "queue), or its row expired."
            )

    def _json(self, rows: list[JournalRow], stored: Sequence[StoredAttributes]) -> None:
        for row, attributes in zip(rows, stored, strict=True):
            outcome = delivery.delivery_outcome(row)
            shown = attributes.as_dict() | {"DeliveryOutcome": outcome.text if outcome else ""}
            self.stdout.write(json.dumps(shown, ensure_ascii=False))

    def _header(self) -> None:
        self.stdout.write("  ".join(name.ljust(width) for name, width in _TABLE) + "  ID")

    def _lines(self, rows: list[JournalRow]) -> None:
        now = int(timezone.now().timestamp())
        for row in rows:
            line = presentation.summarize(row, now=now, lease=self.adapters.lease_policy)
            cells = (
                line.local_time,
                line.status_label,
                line.delivery.text if line.delivery else "-",
                line.message_id,
                line.error or line.subject,
                line.branding or "-",
            )
            self.stdout.write(
                "  ".join(
                    presentation.excerpt(cell, width).ljust(width)
                    for cell, (_, width) in zip(cells, _TABLE, strict=True)
                )
                + f"  {line.key}"
            )

    def _explain(self, row: JournalRow, stored: StoredAttributes, as_json: bool) -> None:
        if as_json:
            self._json([row], [stored])
            return
        entry = selectors.journal_entry(adapters=self.adapters, key=row.key)
        explanation = presentation.explain_status(
            row, now=int(timezone.now().timestamp()), lease=self.adapters.lease_policy
        )
        self.stdout.write(explanation.headline)
        for detail in explanation.details:
            self.stdout.write(f"  {detail}")
        for event in delivery.timeline(row):
            self.stdout.write(f"  {event.at}  {event.type}: {event.summary}")
        if entry.resent_from:
            action = entry.resent_from
            self.stdout.write(
                f"Resent from {action.original_key} by {action.user} at {action.at:%Y-%m-%d %H:%M}"
                f": {action.reason}"
            )
        for action in entry.resends:
            self.stdout.write(
                f"Resent by {action.user} at {action.at:%Y-%m-%d %H:%M} as {action.journal_key}"
                f": {action.reason}"
            )
        self.stdout.write("")
        for item in stored:
            if item.role == AttributeRole.TIMELINE:
                continue  # shown above as the timeline
            value = item.value
            if isinstance(value, dict | list):
                value = json.dumps(value, ensure_ascii=False, sort_keys=True)
            when = presentation.local_text(value) if item.is_time else ""
            self.stdout.write(f"{item.name:>15}  {value}" + (f"  ({when})" if when else ""))
        self.stdout.write("")
