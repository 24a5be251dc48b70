"""``manage.py templates lint PATH...``: the draft check's rules on local files (HTML or MJML),
rendered with the manifest's sample data, so a producer's CI runs the publish gate before a
template reaches the console. Nothing is read from the bucket or the table."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emailops.axe import AxeUnavailable, axe_findings, axe_session
from emailops.core.errors import EmailOpsError
from emailops.core.template_check import check_render
from emailops.core.template_findings import NOTE, Finding
from emailops.core.template_source import TemplateSourceError, publishable
from templates_admin.drafts.gate import gate_options
from templates_admin.drafts.samples import sample_context_for
from templates_admin.mappings.variables import template_manifest

if TYPE_CHECKING:
    from emailops.axe import AxeSession
    from emailops.container import Container

__all__ = ["finding_json", "lint_files", "lint_paths"]

_SUFFIXES = (".html", ".htm", ".mjml")


def lint_paths(paths: Iterable[Path]) -> list[Path]:
    """The files named, and the templates (``.html``, ``.mjml``) in each directory named."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.suffix in _SUFFIXES and p.is_file())
        else:
            files.append(path)
    return files


def lint_files(
    files: Sequence[Path],
    *,
    adapters: Container,
    organization: str | None = None,
    message_id: str = "",
    subject: str | None = None,
    axe: bool = False,
) -> list[tuple[Path, Finding]]:
    """Every finding of each file, checked as the console checks a draft of it (as
    ``custom/O{organization}/{name}`` with ``organization``, else ``default/{name}``). The sample
    context is the manifest's for ``message_id``, else for the file's name without its suffix
    when the manifest has it, else a sample of every variable the file reads. ``axe``: axe-core
    in chromium on each render too (a note says why not, where it cannot run)."""
    with contextlib.ExitStack() as stack:
        session = None
        if axe:
            try:
                session = stack.enter_context(axe_session())
            except AxeUnavailable as exc:
                skipped = Finding(NOTE, "axe", f"axe-core not run: {exc}", "", organization)
                return [
                    (Path("."), skipped),
                    *_lint(files, adapters, organization, message_id, subject, None),
                ]
        return _lint(files, adapters, organization, message_id, subject, session)


def _lint(
    files: Sequence[Path],
    adapters: Container,
    organization: str | None,
    message_id: str,
    subject: str | None,
    session: AxeSession | None,
) -> list[tuple[Path, Finding]]:
    manifest = template_manifest(adapters=adapters)
    options = gate_options(adapters=adapters)
    found: list[tuple[Path, Finding]] = []
    for path in files:
        source = path.read_bytes().decode("utf-8")
        key = f"custom/O{organization}/{path.name}" if organization else f"default/{path.name}"
        wanted = message_id or (path.stem if path.stem in manifest else "")
        context = sample_context_for(
            message_id=wanted, sources={key: source}, subject=subject, adapters=adapters
        )
        if organization:
            context = {**context, "organizationId": organization}
        for finding in check_render(
            renderer=adapters.renderer,
            key=key,
            source=source,
            subject_source=subject,
            contexts=[context],
            organization=organization,
            gate=options,
        ):
            found.append((path, finding))
        if session is not None:
            found += [
                (path, f) for f in _axe(session, adapters, key, source, context, organization)
            ]
    return found


def _axe(
    session: AxeSession,
    adapters: Container,
    key: str,
    source: str,
    context: dict[str, Any],
    organization: str | None,
) -> list[Finding]:
    try:
        html = adapters.renderer.render_body(publishable(key, source), context, name=key).text
    except (EmailOpsError, TemplateSourceError):
        return []  # the check reports it
    return axe_findings(session.violations(html), key=key, organization=organization)


def finding_json(path: Path, finding: Finding) -> dict[str, Any]:
    return {"path": str(path), "rule": finding.rule, **asdict(finding)}
