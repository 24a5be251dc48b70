"""python manage.py load_template_mappings FILE.json — write messageId → template rows.

Each row: ``MessageId``, ``TemplateFile``, ``Subject``, and optionally ``Priority`` (critical,
normal, bulk), ``SendDisabled`` and ``Category`` (a slug, e.g. ``dataset-activity``; what
recipients may unsubscribe from, docs/preferences.md). A category's label is defined in the
console (Email categories); until it is, pages show the slug."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from emailops import container
from emailops.core.errors import EmailOpsError
from emailops.core.ports import TemplateMapping
from emailops.core.reputation import Priority


class Command(BaseCommand):
    help = (
        "Load a JSON list of {MessageId, TemplateFile, Subject[, Priority, SendDisabled, "
        "Category]} into TEMPLATES_TABLE (upsert)."
    )

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
                    priority=_priority(row.get("Priority")),
                    send_disabled=row.get("SendDisabled") is True,
                    category=_category(row.get("Category")),
                    updated_by="load_template_mappings",
                    updated_at=now,
                )
            except (KeyError, TypeError) as exc:
                raise CommandError(
                    f"{file}[{index}]: needs MessageId, TemplateFile, Subject"
                ) from exc
            except ValueError as exc:
                raise CommandError(f"{file}[{index}]: {exc}") from exc
            try:
                current = store.get_mapping(mapping.message_id)
                store.save_mapping(mapping, expected_version=current.version if current else None)
            except EmailOpsError as exc:
                raise CommandError(exc.describe()) from exc
            self.stdout.write(f"{'updated' if current else 'created'} {mapping.message_id}")
        self.stdout.write(f"{len(rows)} mapping(s) loaded into {store.table}")


def _priority(value: object) -> str:
    """A row's Priority: absent = normal; else critical, normal or bulk."""
    if value is None or value == "":
        return Priority.NORMAL.value
    if value not in {p.value for p in Priority}:
        raise ValueError(f"Priority {value!r} is not critical, normal or bulk")
    return str(value)


_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


def _category(value: object) -> str:
    """A row's Category: absent or "" = uncategorised; else a lower-case slug."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or not _SLUG.match(value) or len(value) > 64:
        raise ValueError(f"Category {value!r} is not a slug such as dataset-activity")
    return value
