"""python manage.py email_log — the console's "did they get the email?" from the command line.

    email_log recipient EMAIL [--message-id ID] [--status S] [--since D] [--until D]
                              [--limit N] [--oldest-first] [--json]
    email_log latest EMAIL [--message-id ID] [--json]
    email_log id ID [--json]        (a journal Id or an SES message id)

The same selectors as the console; context values under sensitive keys are masked here too.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime, time
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from api.models import JournalReadAudit
from api.services import journal_read_record
from emailops.core.errors import EmailOpsError
from templates_admin.journal import presentation, selectors

_TABLE = (
    ("TIME", 23),
    ("STATUS", 14),
    ("MESSAGE ID", 30),
    ("SUBJECT / ERROR", 48),
    ("BRANDING", 9),
)

_FILTERS = ("message_id", "status", "since", "until", "limit", "oldest_first")


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
        narrow.add_argument("--status", help="only QUEUED, SENT or FAILED")

        commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
        recipient = commands.add_parser(
            "recipient", parents=[common, narrow], help="every email to an address, newest first"
        )
        recipient.add_argument("email")
        recipient.add_argument("--since", type=_moment, help="from this day or time")
        recipient.add_argument("--until", type=_until, help="up to this day or time")
        recipient.add_argument("--limit", type=int, default=selectors.PAGE_SIZE)
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
        journal_read_record(
            channel=JournalReadAudit.Channel.CLI,
            action=command,
            query=options.get("id") or options.get("email") or "",
            filters={k: options.get(k) for k in _FILTERS},
        )
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
        if limit < 1:
            raise CommandError("--limit must be at least 1")
        rows: list[dict[str, Any]] = []
        calls, cursor = 0, None
        while len(rows) < limit:
            last = selectors.journal_search(
                query=email,
                message_id=options["message_id"],
                status=options["status"],
                since=options.get("since"),
                until=options.get("until"),
                cursor=cursor,
                limit=min(selectors.MAX_LIMIT, limit - len(rows)),
                oldest_first=options.get("oldest_first", False),
            )
            rows += last.rows
            calls += last.calls
            cursor = last.next_cursor
            if not cursor:
                break
        for problem in last.problems:
            self.stderr.write(f"warning: {problem}")
        if not rows:
            self._no_rows(f"no rows for {email}", last, options["json"])
        elif command == "latest":
            self._explain(rows[0], options["json"])
        elif options["json"]:
            self._json(rows)
        else:
            self._table(rows)
            more = " (more: raise --limit)" if cursor else ""
            self.stdout.write(
                f"{len(rows)} row{'s' * (len(rows) != 1)}{more}; {calls} DynamoDB calls"
            )

    def _one(self, key: str, options: dict[str, Any]) -> None:
        key = key.strip()
        if not key:
            raise CommandError("give a journal Id or an SES message id")
        if ":" not in key and selectors.looks_like_email(key):
            raise CommandError(f"{key!r} is an address: use `email_log recipient {key}`")
        result = selectors.journal_search(query=key)
        for problem in result.problems:
            self.stderr.write(f"warning: {problem}")
        if not result.rows:
            self._no_rows(f"no row has Id or SES message id {key}", result, options["json"])
        for row in result.rows:
            self._explain(row, options["json"])

    def _no_rows(self, message: str, result: selectors.JournalSearchResult, as_json: bool) -> None:
        runs = result.runs
        # With --json, stdout stays pure JSON lines (none); the message goes to stderr.
        out = self.stderr if as_json else self.stdout
        out.write(f"{message}. Searched: " + "; ".join(r.describe() for r in runs))
        out.write(
            "No row means the email was never queued (check the producer and the dead-letter "
            "queue), or its row expired."
        )

    def _json(self, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            self.stdout.write(json.dumps(presentation.masked_row(row), ensure_ascii=False))

    def _table(self, rows: list[dict[str, Any]]) -> None:
        now = int(timezone.now().timestamp())
        header = "  ".join(name.ljust(width) for name, width in _TABLE) + "  ID"
        self.stdout.write(header)
        for row in rows:
            line = presentation.summarize(row, now=now)
            cells = (
                line.local_time,
                line.status_label,
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

    def _explain(self, row: dict[str, Any], as_json: bool) -> None:
        if as_json:
            self._json([row])
            return
        entry = selectors.journal_entry(key=str(row["Id"]))
        explanation = presentation.explain_status(
            row, now=int(timezone.now().timestamp()), lease_ends_at=entry.lease_ends_at
        )
        self.stdout.write(explanation.headline)
        for detail in explanation.details:
            self.stdout.write(f"  {detail}")
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
        for name, value in presentation.masked_row(row).items():
            if isinstance(value, dict | list):
                value = json.dumps(value, ensure_ascii=False, sort_keys=True)
            when = presentation.local_text(value) if name in presentation.EPOCH_ATTRIBUTES else ""
            self.stdout.write(f"{name:>15}  {value}" + (f"  ({when})" if when else ""))
        self.stdout.write("")
