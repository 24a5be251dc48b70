"""STAND-IN check engine: reports render errors only. The console branch (wip/template-console)
replaces this file with the full check (sizes, links, images, subject, variables); the names and
signatures here are the shared contract (docs: /work/briefs/issue16-contract.md)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from emailops import wiring
from emailops.core.errors import EmailOpsError, TemplateError
from templates_admin.mappings.variables import sample_context, template_manifest
from templates_admin.models import key_organization

if TYPE_CHECKING:
    from templates_admin.models import TemplateDraft

__all__ = ["Finding", "check_draft", "check_sources"]


@dataclass(frozen=True)
class Finding:
    severity: str  # "error" | "warning"
    code: str
    message: str
    file: str  # the object key
    organization: str | None
    line: int | None = None


def check_sources(
    *,
    message_id: str,
    sources: dict[str, str],
    subject: str | None,
    contexts: list[dict[str, Any]] | None = None,
) -> list[Finding]:
    """Render every (key → source) and the subject with each context; render errors only."""
    renderer = wiring.renderer()
    if contexts is None:
        names = set(template_manifest().get(message_id, ()))
        for source in sources.values():
            with contextlib.suppress(TemplateError):
                names |= renderer.variables(source)
        contexts = [sample_context(names)]
    findings: list[Finding] = []
    for key, source in sources.items():
        org = key_organization(key)
        for context in contexts:
            try:
                renderer.render_body(source, {**context, "organizationId": org}, name=key)
            except TemplateError as exc:
                findings.append(Finding("error", "render", exc.reason, key, org, exc.line))
                break
    if subject:
        for context in contexts:
            try:
                renderer.render_subject(subject, context, name="subject")
            except TemplateError as exc:
                findings.append(Finding("error", "subject", exc.reason, "subject", None, exc.line))
                break
    return findings


def check_draft(
    *, draft: TemplateDraft, contexts: list[dict[str, Any]] | None = None
) -> list[Finding]:
    sources = {draft.key: draft.source} if draft.source else {}
    try:
        return check_sources(
            message_id=draft.message_id,
            sources=sources,
            subject=draft.subject or None,
            contexts=contexts,
        )
    except EmailOpsError as exc:
        return [Finding("error", "check", exc.describe(), draft.key, draft.organization, None)]
