"""python manage.py bulk_resend — the console's bulk resend from the command line.

    bulk_resend --as USER --message-id ID --since T --until T --reason TEXT
                [--failed] [--bounced-transient] [--recipient EMAIL ...] [--rate N]

Resends are made in USER's name (who must hold the bulk_resend permission), each audited like a
resend from the journal page. The job is recorded and runs in this process.
"""

from __future__ import annotations

import argparse
from datetime import datetime

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from emailops import container
from jobs.models import Job
from templates_admin.jobs import bulk_resend
from templates_admin.management.jobs import cli_job_create, cli_job_run


def _moment(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO date or time") from None
    return moment if moment.tzinfo else timezone.make_aware(moment)


class Command(BaseCommand):
    help = "Resend the FAILED (or transiently bounced) rows of one messageId in a time range."

    def add_arguments(self, parser):
        parser.add_argument("--as", dest="username", required=True, help="whose name to resend in")
        parser.add_argument("--message-id", required=True)
        parser.add_argument("--since", type=_moment, required=True, help="ISO date or time")
        parser.add_argument("--until", type=_moment, required=True, help="ISO date or time")
        parser.add_argument("--reason", required=True, help="kept with every resend")
        parser.add_argument("--failed", action="store_true", help="FAILED rows (the default)")
        parser.add_argument(
            "--bounced-transient", action="store_true", help="BOUNCED rows, bounce type Transient"
        )
        parser.add_argument(
            "--recipient", action="append", default=[], help="only this recipient (repeatable)"
        )
        parser.add_argument(
            "--rate", type=float, default=None, help="resends per second (default: shared rate)"
        )

    def handle(self, *args, username: str, **options):
        adapters = container.current()
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}")
        selections = [
            name
            for name, wanted in (
                (bulk_resend.FAILED, options["failed"]),
                (bulk_resend.BOUNCED_TRANSIENT, options["bounced_transient"]),
            )
            if wanted
        ] or [bulk_resend.FAILED]
        try:
            inputs = bulk_resend.bulk_resend_inputs(
                message_id=options["message_id"],
                since=options["since"],
                until=options["until"],
                selections=selections,
                reason=options["reason"],
                rate=options["rate"] or bulk_resend.default_rate(adapters=adapters),
                recipients=options["recipient"],
            )
            job = cli_job_create(kind=Job.Kind.BULK_RESEND, inputs=inputs, user=user)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        except PermissionDenied as exc:
            raise CommandError(f"{username} may not start a bulk resend ({exc})") from exc
        job = cli_job_run(
            job, adapters=adapters, failure="bulk resend job #{job.pk} failed: {job.error}"
        )
        result = job.result or {}
        self.stdout.write(
            f"job #{job.pk}: {result.get('resent', 0)} resent, {result.get('skipped', 0)} skipped "
            f"(resent before), {result.get('failed', 0)} could not be resent; "
            f"{result.get('selection', {}).get('matched', 0)} row(s) matched"
        )
        if result.get("selection", {}).get("partial"):
            self.stdout.write("the selection stopped at its read bound (OPS_SCAN_MAX_ITEMS)")
