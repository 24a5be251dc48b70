"""python manage.py templates — the template lifecycle as code (the console's services, twinned).

    templates pull DIR                       published files in the bucket's layout + mappings.json
    templates draft KEY FILE [--subject S] [--message-id ID]   prints the draft's id on its last line
    templates check DRAFT_ID                 findings; exit 1 on errors
    templates publish DRAFT_ID [--reason R] [--accept-warnings]   prints the new version
    templates history KEY                    versions, newest first, the version id first
    templates rollback KEY VERSION [--reason R]
    templates lint PATH... [--org ORG] [--message-id ID] [--subject S] [--axe]   local files; exit 1 on errors

Every action takes --json. KEY is an object key: default/welcome.html, custom/O367/welcome.html.
--user names the console user the change is recorded for (default: the OS user, if such a console
user exists); a subject change needs one, as in the console.
"""

from __future__ import annotations

import getpass
import json
from dataclasses import asdict
from functools import cached_property
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

from emailops import container
from emailops.container import Container
from emailops.core.errors import EmailOpsError
from templates_admin.drafts import selectors, services
from templates_admin.drafts.layout import validate_template_key
from templates_admin.management.actions import ActionCommand
from templates_admin.models import TemplateDraft, TemplateVersion


def version_json(version: TemplateVersion) -> dict[str, Any]:
    return {
        "version_id": version.version_id,
        "key": version.key,
        "kind": version.kind,
        "at": version.at.isoformat(timespec="seconds"),
        "author": version.author.get_username() if version.author else "",
        "reason": version.reason,
        "etag": version.etag,
        "parent_version": version.parent_version,
        "restored_from": version.restored_from,
        "draft": version.draft_id,
    }


class Command(ActionCommand):
    help = "Pull, draft, check, publish, list history of and roll back templates."

    def add_arguments(self, parser):
        action = self.add_actions(
            parser,
            common=lambda command: command.add_argument(
                "--user", default=None, help="console username to record"
            ),
        )
        pull = action("pull", "write the published files and mappings.json into DIR")
        pull.add_argument("directory", type=Path)
        draft = action("draft", "create a draft of KEY from FILE")
        draft.add_argument("key")
        draft.add_argument("file", type=Path)
        draft.add_argument("--subject", default=None)
        draft.add_argument("--message-id", default="")
        check = action("check", "check a draft; exit 1 on errors")
        check.add_argument("draft_id", type=int)
        publish = action("publish", "publish a draft")
        publish.add_argument("draft_id", type=int)
        publish.add_argument("--reason", default="")
        publish.add_argument("--accept-warnings", action="store_true")
        history = action("history", "versions of KEY, newest first")
        history.add_argument("key")
        rollback = action("rollback", "publish an older version of KEY again")
        rollback.add_argument("key")
        rollback.add_argument("version")
        rollback.add_argument("--reason", default="")
        lint = action("lint", "check local template files (HTML or MJML); exit 1 on errors")
        lint.add_argument("paths", nargs="+", type=Path)
        lint.add_argument("--org", default=None, help="check as this organization's copy")
        lint.add_argument("--message-id", default="", help="the manifest entry to sample")
        lint.add_argument("--subject", default=None, help="the subject to check with the body")
        lint.add_argument("--axe", action="store_true", help="also run axe-core in chromium")

    @cached_property
    def adapters(self) -> Container:
        """The run's container (a command is its process's entry), built on first use: the
        history needs none."""
        return container.current()

    def handle(self, *args, action: str, **options):
        try:
            return self.run_action(action, options)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        except TemplateDraft.DoesNotExist as exc:
            raise CommandError(f"no draft #{options.get('draft_id')}") from exc
        except (EmailOpsError, selectors.VersionNotFound) as exc:
            raise CommandError(str(exc)) from exc

    def _user(self, options):
        name = options["user"] or getpass.getuser()
        user = get_user_model().objects.filter(username=name).first()
        if options["user"] and user is None:
            raise CommandError(f"no console user {name!r}")
        return user

    def _pull(self, options) -> None:
        root: Path = options["directory"]
        files = selectors.published_files(template_store=self.adapters.template_store)
        for obj in files:
            path = root / obj.key
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(obj.data)
        mappings = [
            {"MessageId": m.message_id, "TemplateFile": m.template_file, "Subject": m.subject}
            for m in selectors.published_mappings(mapping_store=self.adapters.mapping_store)
        ]
        root.mkdir(parents=True, exist_ok=True)
        (root / "mappings.json").write_text(json.dumps(mappings, indent=2) + "\n")
        self.emit(
            {
                "files": [{"key": o.key, "version_id": o.version} for o in files],
                "mappings": mappings,
            },
            "\n".join([f"{o.version}  {o.key}" for o in files])
            + f"\n{len(files)} file(s) and {len(mappings)} mapping(s) written to {root}",
        )

    def _draft(self, options) -> None:
        validate_template_key(options["key"])
        try:
            # Bytes as they are (newlines included): what is published is exactly the file.
            source = options["file"].read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {options['file']}: {exc}") from exc
        draft = services.draft_create(
            key=options["key"],
            source=source,
            subject=options["subject"],
            message_id=options["message_id"],
            user=self._user(options),
            adapters=self.adapters,
        )
        self.emit(
            {"id": draft.pk, "key": draft.key, "base_version": draft.base_version},
            f"draft of {draft.key} from version {draft.base_version or '(new file)'}\n{draft.pk}",
        )

    def _check(self, options) -> None:
        from templates_admin.drafts.check import draft_verdict

        draft = selectors.draft_get(draft_id=options["draft_id"])
        verdict = draft_verdict(draft=draft, adapters=self.adapters)
        findings, errors = verdict.findings, verdict.errors
        inherited = {id(f) for f in verdict.inherited_warnings}
        lines = []
        for f in findings:
            lines.append(
                f"{f.severity:7}  {f.file}"
                + (f" [O{f.organization}]" if f.organization else "")
                + (f":{f.line}" if f.line else "")
                + f"  {f.rule}: {f.message}"
                + ("  (the published version has it too)" if id(f) in inherited else "")
            )
            if f.element and f.severity != "note":
                lines.append(f"         at {f.element}")
            if f.fix and f.severity != "note":
                lines.append(f"         fix: {f.fix}")
        lines.append(
            f"{len(errors)} error(s), {len(verdict.new_warnings)} new warning(s), "
            f"{len(inherited)} already published"
        )
        lines.append(verdict.basis)
        self.emit(
            [{"rule": f.rule, **asdict(f), "inherited": id(f) in inherited} for f in findings],
            "\n".join(lines),
        )
        if errors:
            raise CommandError(f"the check found {len(errors)} error(s)", returncode=1)

    def _publish(self, options) -> None:
        try:
            version = services.draft_publish(
                draft_id=options["draft_id"],
                user=self._user(options),
                reason=options["reason"],
                adapters=self.adapters,
                accept_warnings=options["accept_warnings"],
            )
        except (services.CheckFailed, services.WarningsNotAccepted) as exc:
            details = "\n".join(f"  {f.severity}: {f.file}: {f.message}" for f in exc.findings)
            hint = " (--accept-warnings to publish anyway)" * isinstance(
                exc, services.WarningsNotAccepted
            )
            raise CommandError(f"{exc}{hint}\n{details}") from exc
        if version is None:
            self.emit({"version_id": None}, "the mapping's subject was changed; no file version")
            return
        self.emit(version_json(version), version.version_id)

    def _history(self, options) -> None:
        validate_template_key(options["key"])
        versions = selectors.template_history(key=options["key"])
        if not versions and self.adapters.template_store.head_object(options["key"]) is None:
            raise CommandError(f"no template at {options['key']} (templates pull lists them)")
        if not versions and not self.as_json:
            self.stdout.write(
                f"{options['key']}: no version recorded (written outside the console)"
            )
            return
        self.emit(
            [version_json(v) for v in versions],
            "\n".join(
                f"{v.version_id}  {v.at:%Y-%m-%d %H:%M:%S}  {v.kind:8}  "
                f"{v.author.get_username() if v.author else '-'}  {v.reason}"
                for v in versions
            ),
        )

    def _rollback(self, options) -> None:
        version = services.template_rollback(
            key=options["key"],
            version_id=options["version"],
            user=self._user(options),
            reason=options["reason"],
            template_store=self.adapters.template_store,
        )
        self.emit(version_json(version), version.version_id)

    def _lint(self, options) -> None:
        from templates_admin.drafts.lint import finding_json, lint_files, lint_paths

        files = lint_paths(options["paths"])
        missing = [str(p) for p in files if not p.is_file()]
        if missing:
            raise CommandError(f"no such file: {', '.join(missing)}")
        try:
            found = lint_files(
                files,
                adapters=self.adapters,
                organization=options["org"],
                message_id=options["message_id"],
                subject=options["subject"],
                axe=options["axe"],
            )
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read: {exc}") from exc
        lines = []
        for path, f in found:
            where = f"{path}" + (f":{f.line}" if f.line else "")
            lines.append(f"{f.severity:7}  {where}  {f.rule}: {f.message}")
            if f.element and f.severity != "note":
                lines.append(f"         at {f.element}")
            if f.fix and f.severity != "note":
                lines.append(f"         fix: {f.fix}")
        errors = sum(1 for _, f in found if f.is_error)
        lines.append(
            f"{len(files)} file(s): {errors} error(s), "
            f"{sum(1 for _, f in found if f.severity == 'warning')} warning(s)"
        )
        self.emit([finding_json(path, f) for path, f in found], "\n".join(lines))
        if errors:
            raise CommandError(f"the lint found {errors} error(s)", returncode=1)
