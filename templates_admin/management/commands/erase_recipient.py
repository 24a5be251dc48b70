"""python manage.py erase_recipient ADDRESS [--yes] [--reason TEXT] — honour an erasure request.

Deletes every journal row of ADDRESS (new and Go-era, found through the recipient indexes), its
unmatched delivery events (any spelling), the API's read-audit entries naming it and its
dead-letter messages, leaves a tombstone (a keyed hash, not the address) that later writes meet,
and prints what it removed per kind. Its suppression entry is kept (it is what stops mail to the
address); --also-suppress adds one. Its preferences are removed unless --keep-preferences.
Without --yes it
shows what it would remove and asks first. Recorded as a Recipient erasure job (the audit).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from emailops import container
from emailops.core.errors import EmailOpsError
from jobs.models import Job
from templates_admin.jobs import erasure
from templates_admin.journal.erasure import recipient_erase_preview
from templates_admin.management.jobs import cli_job_create, cli_job_run


class Command(BaseCommand):
    help = "Erase every journal row of one email address (keeps its suppression entry)."

    def add_arguments(self, parser):
        parser.add_argument("address")
        parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")
        parser.add_argument(
            "--reason", default="erasure request (command line)", help="kept with the job"
        )
        parser.add_argument(
            "--also-suppress",
            action="store_true",
            help="also add a suppression entry (someone who asked to receive no more mail)",
        )
        parser.add_argument(
            "--keep-preferences",
            action="store_true",
            help="keep the categories the address unsubscribed from (default: removed too)",
        )

    def handle(
        self,
        *args,
        address: str,
        yes: bool,
        reason: str,
        also_suppress: bool,
        keep_preferences: bool = False,
        **options,
    ) -> None:
        adapters = container.current()
        try:
            inputs = erasure.erasure_inputs(
                adapters=adapters,
                address=address,
                reason=reason,
                also_suppress=also_suppress,
                keep_preferences=keep_preferences,
            )
            if not yes:
                preview = recipient_erase_preview(
                    adapters=container.current(), address=address, keep_preferences=keep_preferences
                )
                for line in preview.lines():
                    self.stdout.write(f"  {line}")
                answer = input(f"Erase {inputs['addressMasked']}? This cannot be undone. [y/N] ")
                if answer.strip().lower() not in ("y", "yes"):
                    raise CommandError("nothing erased")
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        except EmailOpsError as exc:
            raise CommandError(exc.describe()) from None
        job = cli_job_run(
            cli_job_create(kind=Job.Kind.ERASE_RECIPIENT, inputs=inputs),
            adapters=adapters,
            failure="job #{job.pk} failed: {job.error} (run the command again)",
        )
        self.stdout.write(f"Erased {inputs['addressMasked']} (job #{job.pk}):")
        for line in job.result["lines"]:
            self.stdout.write(f"  {line}")
