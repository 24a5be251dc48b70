"""python manage.py migrate_suppression_table --to <table> — copy the suppression table from our
old shape (key ``Address``) into one in the Go service's shape (key ``Email``)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from emailops import container
from emailops.aws.suppression_migration import suppression_table_migrate
from emailops.config import require
from emailops.core.errors import EmailOpsError


class Command(BaseCommand):
    help = (
        "Copy every entry of the suppression table (default: SUPPRESSION_TABLE) into a table keyed "
        "by Email, as the Go service reads it; created if missing. Idempotent: run it again to "
        "copy entries added meanwhile. Then set SUPPRESSION_TABLE (ours and the Go service's) to it."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("--to", required=True, dest="target", help="the new table's name")
        parser.add_argument("--from", default="", dest="source", help="default: SUPPRESSION_TABLE")

    def handle(self, *args, target: str, source: str, **options):
        built = container.current()
        source = source or require("SUPPRESSION_TABLE", built.config.aws.suppression_table)
        try:
            done = suppression_table_migrate(
                built.client("dynamodb"), source=source, target=target, report=self.stdout.write
            )
        except (EmailOpsError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"suppressions {source} -> {target}: {done.read} read, {done.copied} copied, "
            f"{done.present} already there. Removal records (the console's audit trail) are "
            f"kept by address and need no copy. Next: SUPPRESSION_TABLE={target}"
        )
