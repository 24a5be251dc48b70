"""python manage.py dlq — the console's dead-letter page from the command line.

    dlq list [--json] [--limit N]            what is on the dead-letter queue (nothing is consumed)
    dlq redrive (--all | ID ...) [--rate N]  move messages back to the source queue, N per second

A redrive is a job like the console's (recorded, with its steps), run here in this process.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from audit.models import JournalReadAudit
from audit.reads import read_record
from emailops import container
from emailops.core.errors import EmailOpsError
from jobs.models import Job
from templates_admin.jobs import dlq
from templates_admin.management.jobs import cli_job_create, cli_job_run


class Command(BaseCommand):
    help = "List the dead-letter queue without consuming it, or redrive it to the source queue."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        listing = sub.add_parser("list", help="show dead-lettered requests and why")
        listing.add_argument("--json", action="store_true", help="a JSON list of messages")
        listing.add_argument("--limit", type=int, default=100, help="at most N (default 100)")
        redrive = sub.add_parser("redrive", help="send messages back to the source queue")
        redrive.add_argument("ids", nargs="*", metavar="ID", help="SQS message ids to redrive")
        redrive.add_argument("--all", action="store_true", help="every message on the DLQ")
        redrive.add_argument(
            "--rate", type=float, default=5.0, help="messages per second (default 5)"
        )

    def handle(self, *args, action: str, **options):
        try:
            if action == "list":
                return self._list(options["limit"], options["json"])
            return self._redrive(options["ids"], options["all"], options["rate"])
        except EmailOpsError as exc:
            raise CommandError(exc.describe()) from exc

    def _list(self, limit: int, as_json: bool) -> None:
        adapters = container.current()
        listing = dlq.dead_letter_list(
            queue=adapters.queue, sensitive=adapters.config.console.sensitive_keys, limit=limit
        )
        read_record(
            channel=JournalReadAudit.Channel.CLI,
            action="dlq-list",
            query="",
            filters={"limit": limit},
            rows=len(listing.messages),
        )
        if as_json:
            self.stdout.write(dlq.as_json_lines(listing))
            return
        self.stdout.write(
            f"{listing.queue_url}: about {listing.depth.total} message(s)"
            f" (source queue {listing.source_url})"
        )
        for letter in listing.messages:
            request = letter.request or {}
            what = (
                f"{request.get('messageId', '')} to {', '.join(request.get('recipients', []))}"
                if letter.request
                else f"unparsable request: {letter.request_error}"
            )
            self.stdout.write(
                f"{letter.message_id}  receives={letter.receive_count}  {what}\n"
                f"    reason: {letter.failure_reason or '(none: moved by SQS after maxReceiveCount)'}"
            )
        if listing.truncated:
            self.stdout.write(f"... more than {len(listing.messages)}; use --limit")

    def _redrive(self, ids: list[str], redrive_all: bool, rate: float) -> None:
        try:
            inputs = dlq.redrive_inputs(ids=ids, redrive_all=redrive_all, rate=rate)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        job = cli_job_run(
            cli_job_create(kind=Job.Kind.DLQ_REDRIVE, inputs=inputs),
            adapters=container.current(),
            failure="redrive job #{job.pk} failed: {job.error}",
        )
        self.stdout.write(f"job #{job.pk}: {dlq.redrive_result_text(job.result or {})}")
        if (job.result or {}).get("notFound"):
            raise CommandError("some messages were not found on the dead-letter queue")
