"""python manage.py load_templates DIR — upload a default/ and custom/O{id}/ tree to S3_BUCKET."""

from __future__ import annotations

import re
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from emailops import container
from emailops.core.errors import EmailOpsError

_LAYOUT = re.compile(r"^(default/[^/]+|custom/O\d+/[^/]+)$")


class Command(BaseCommand):
    help = "Upload templates from DIR (laid out as default/FILE and custom/O{orgId}/FILE)."

    # The system checks import the URLconf (the console, the API): 0.4 s of every run of an
    # operator's command. `manage.py check` (CI, the deploy) runs them.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("directory", type=Path)

    def handle(self, *args, directory: Path, **options):
        if not directory.is_dir():
            raise CommandError(f"{directory} is not a directory")
        files = sorted(p for p in directory.rglob("*") if p.is_file())
        keys = [p.relative_to(directory).as_posix() for p in files]
        stray = [k for k in keys if not _LAYOUT.match(k)]
        if stray:
            raise CommandError(f"not in the default/ or custom/O{{id}}/ layout: {', '.join(stray)}")
        store = container.current().template_store
        try:
            for path, key in zip(files, keys, strict=True):
                store.write_template(key, path.read_text(encoding="utf-8"))
                self.stdout.write(f"uploaded {key}")
        except (EmailOpsError, UnicodeDecodeError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"{len(keys)} template(s) uploaded to {store.bucket}")
