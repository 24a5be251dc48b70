"""python manage.py load_template_mappings FILE.json — write messageId → template rows."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from emailops import container
from emailops.core.errors import EmailOpsError
from emailops.core.ports import TemplateMapping


class Command(BaseCommand):
    help = "Load a JSON list of {MessageId, TemplateFile, Subject} into TEMPLATES_TABLE (upsert)."

    # The system checks import the URLconf (the console, the API): 0.4 s of every run of an
    # operator's command. `manage.py check` (CI, the deploy) runs them.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)

    def handle(self, *args, file: Path, **options):
        try:
            rows = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read {file}: {exc}") from exc
        if not isinstance(rows, list):
            raise CommandError(f"{file}: expected a JSON list of mappings")
        store = container.current().mapping_store
        now = datetime.now(UTC).isoformat(timespec="seconds")
        for index, row in enumerate(rows):
            try:
                mapping = TemplateMapping(
                    message_id=row["MessageId"],
                    template_file=row["TemplateFile"],
                    subject=row["Subject"],
                    send_disabled=row.get("SendDisabled") is True,
                    updated_by="load_template_mappings",
                    updated_at=now,
                )
            except (KeyError, TypeError) as exc:
                raise CommandError(
                    f"{file}[{index}]: needs MessageId, TemplateFile, Subject"
                ) from exc
            try:
                current = store.get_mapping(mapping.message_id)
                store.save_mapping(mapping, expected_version=current.version if current else None)
            except EmailOpsError as exc:
                raise CommandError(exc.describe()) from exc
            self.stdout.write(f"{'updated' if current else 'created'} {mapping.message_id}")
        self.stdout.write(f"{len(rows)} mapping(s) loaded into {store.table}")
