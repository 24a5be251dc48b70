"""The template check, Django side: gather the sources, the subject and the contexts, then run the
engine in ``emailops.core.template_check`` on every (file x organization) render.

Used by the draft pages, ``manage.py templates check`` (through the publish service) and the daily
``check_templates`` (``templates_admin.jobs.template_check``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from emailops.core.errors import EmailOpsError
from emailops.core.ports import TemplateMapping, default_template_key
from emailops.core.preferences import may_be_refused
from emailops.core.template_check import check_render, missing_in_contexts, unsubscribe_findings
from emailops.core.template_findings import (
    ERROR,
    NOTE,
    WARNING,
    Finding,
    dedupe,
    organization_of_key,
)
from templates_admin.drafts.gate import gate_options
from templates_admin.drafts.preview import RecentSend, recent_sends
from templates_admin.drafts.samples import sample_context_for, variables_of
from templates_admin.drafts.selectors import written_source
from templates_admin.mappings import selectors as mapping_selectors
from templates_admin.mappings.variables import template_manifest

if TYPE_CHECKING:
    from emailops.container import Container
    from emailops.core.rendering import Renderer
    from templates_admin.models import TemplateDraft

__all__ = [
    "ERROR",
    "WARNING",
    "DraftVerdict",
    "Finding",
    "check_draft",
    "check_sources",
    "draft_sources",
    "draft_verdict",
    "errors_of",
    "warnings_of",
]


def errors_of(findings: Sequence[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == ERROR]


def warnings_of(findings: Sequence[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == WARNING]


def _optional(source: str, *, name: str, renderer: Renderer) -> set[str]:
    try:
        return renderer.optional_variables(source, name=name)
    except EmailOpsError:
        return set()


def _variable_line(source: str, name: str) -> int | None:
    match = re.search(rf"(?<![\w]){re.escape(name)}(?!\w)", source)
    return source.count("\n", 0, match.start()) + 1 if match else None


def _missing_variable_findings(
    *,
    key: str,
    source: str,
    subject: str | None,
    recent: Sequence[Mapping[str, Any]],
    renderer: Renderer,
) -> list[Finding]:
    if not recent:
        return []
    used = variables_of(source, name=key, renderer=renderer) | (
        variables_of(subject, name="subject", renderer=renderer) if subject else set()
    )
    # Read only under a test of itself ({{if .x}}): a send without it renders as meant.
    used -= _optional(source, name=key, renderer=renderer) | (
        _optional(subject, name="subject", renderer=renderer) if subject else set()
    )
    organization = organization_of_key(key)
    return [
        Finding(
            WARNING,
            "missing-variable",
            f"{name} is missing in {absent} of the last {len(recent)} sends (it would render "
            "empty)",
            key,
            organization,
            _variable_line(source, name),
        )
        for name, absent in missing_in_contexts(used, recent, ignore={"subject"}).items()
    ]


def check_sources(
    *,
    message_id: str,
    sources: Mapping[str, str],
    subject: str | None,
    adapters: Container,
    recent: Sequence[Mapping[str, Any]] | None = None,
    mapping: TemplateMapping | None = None,
) -> list[Finding]:
    """Check each ``key -> source`` (``default/...`` renders as the default, ``custom/O{org}/...``
    as that organization) with ``subject`` (None: no subject, a file without a mapping),
    rendered with the manifest's sample context; ``recent`` (real sends' contexts, masked) is
    what the "missing in recent sends" warning compares with (the daily check passes none).
    ``mapping``: ``message_id``'s, when the caller has read it (else read here)."""
    if mapping is None and message_id:
        mapping = mapping_selectors.mapping_get(
            message_id=message_id, mapping_store=adapters.mapping_store
        )
    renderer = adapters.renderer
    gate = gate_options(adapters=adapters)
    sample = sample_context_for(
        message_id=message_id, sources=sources, subject=subject, adapters=adapters
    )
    found: list[Finding] = []
    for key, source in sources.items():
        organization = organization_of_key(key)
        context = sample if organization is None else {**sample, "organizationId": organization}
        found += check_render(
            renderer=renderer,
            key=key,
            source=source,
            subject_source=subject,
            contexts=[context],
            organization=organization,
            gate=gate,
        )
        found += _missing_variable_findings(
            key=key, source=source, subject=subject, recent=recent or (), renderer=renderer
        )
    found += _unsubscribe_findings(mapping=mapping, sources=sources, adapters=adapters)
    return dedupe(found)


def _unsubscribe_findings(
    *, mapping: TemplateMapping | None, sources: Mapping[str, str], adapters: Container
) -> list[Finding]:
    """Mail a recipient may unsubscribe from (its mapping categorised and not critical) needs a
    visible link and a base URL (PUBLIC_BASE_URL, the host of the /u/<token> links) to make it
    from."""
    if mapping is None or not may_be_refused(category=mapping.category, priority=mapping.priority):
        return []
    base_url_set = bool(adapters.config.preferences.public_base_url)
    found: list[Finding] = []
    for key, source in sources.items():
        found += unsubscribe_findings(
            key=key,
            organization=organization_of_key(key),
            variables=variables_of(source, name=key, renderer=adapters.renderer),
            base_url_set=base_url_set,
        )
    return found


def _mapping_of(draft: TemplateDraft, adapters: Container) -> TemplateMapping | None:
    if not draft.message_id:
        return None
    return mapping_selectors.mapping_get(
        message_id=draft.message_id, mapping_store=adapters.mapping_store
    )


def draft_sources(
    *, draft: TemplateDraft, adapters: Container, mapping: TemplateMapping | None = None
) -> tuple[dict[str, str], str | None]:
    """What a draft would publish, as renders: its own file when it changes one, else (a
    subject-only draft) the mapping's default file and every branded copy; and the subject.
    ``mapping``: the draft's, when the caller has read it (else read here)."""
    mapping = mapping or _mapping_of(draft, adapters)
    subject = draft.subject or (mapping.subject if mapping else None)
    if draft.source:
        return {draft.key: draft.source}, subject
    store = adapters.template_store
    sources: dict[str, str] = {}
    if mapping is not None:
        orgs = mapping_selectors.override_index(template_store=store).get(mapping.template_file, ())
        keys = [default_template_key(mapping.template_file)] + [
            mapping_selectors.template_key(mapping=mapping, organization_id=org) for org in orgs
        ]
    else:
        keys = [draft.key]
    for key in keys:
        source = store.read_template(key)
        if source is not None:
            sources[key] = source
    return sources, subject


def _identity(finding: Finding) -> tuple:
    """A finding as the published version would have it too (lines move with an edit)."""
    return (finding.severity, finding.code, finding.message, finding.file, finding.organization)


@dataclass(frozen=True)
class DraftVerdict:
    """The check of a draft, judged against the published version: only the warnings the draft
    introduces need confirming; ``basis`` says what it was rendered and compared with."""

    findings: list[Finding]
    inherited: frozenset[tuple]  # identities of the warnings the published version has too
    basis: str

    @property
    def errors(self) -> list[Finding]:
        return errors_of(self.findings)

    @property
    def new_warnings(self) -> list[Finding]:
        return [f for f in warnings_of(self.findings) if _identity(f) not in self.inherited]

    @property
    def inherited_warnings(self) -> list[Finding]:
        return [f for f in warnings_of(self.findings) if _identity(f) in self.inherited]

    @property
    def notes(self) -> list[Finding]:
        """Listed, never to confirm: partial client support, the spam score under the line."""
        return [f for f in self.findings if f.severity == NOTE]


def _published_sources(
    draft: TemplateDraft, sources: Mapping[str, str], *, adapters: Container
) -> dict[str, str]:
    if not draft.source:  # a subject-only draft renders the published files themselves
        return dict(sources)
    current = adapters.template_store.read_object(draft.key)
    if current is None:
        return {}
    return {
        draft.key: written_source(current, key=draft.key, template_store=adapters.template_store)
    }


def _basis(message_id: str, sends: Sequence[RecentSend] | None, *, adapters: Container) -> str:
    manifest = message_id and template_manifest(adapters=adapters).get(message_id) is not None
    rendered = (
        f"Rendered with the sample context of {message_id} (the variables manifest's names)"
        if manifest
        else "Rendered with a sample value for every variable the template reads"
    )
    if not sends:
        return f"{rendered}; no recent sends, so no variable was compared with real traffic."
    newest = max((s.timestamp for s in sends if s.timestamp), default=None)
    when = f", newest {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(newest))}" if newest else ""
    plural = "s" if len(sends) != 1 else ""
    return f"{rendered}; variables compared with the last {len(sends)} send{plural}{when}."


def draft_verdict(
    *, draft: TemplateDraft, adapters: Container, sends: Sequence[RecentSend] | None = None
) -> DraftVerdict:
    """Every (file x organization) render of ``draft`` with the sample context, variables
    compared with the recent sends (``sends`` when the caller has read them already, as the
    preview page has; else read here), and the same check of the published version, so that a
    warning already there is not the draft's to confirm."""

    try:
        mapping = _mapping_of(draft, adapters)  # one read for both checks
        sources, subject = draft_sources(draft=draft, adapters=adapters, mapping=mapping)
        if sends is None and draft.message_id:
            sends = recent_sends(message_id=draft.message_id, adapters=adapters).sends
        recent = [send.context for send in sends or ()]
        findings = check_sources(
            message_id=draft.message_id,
            sources=sources,
            subject=subject,
            adapters=adapters,
            recent=recent,
            mapping=mapping,
        )
        published = _published_sources(draft, sources, adapters=adapters)
        before = (
            check_sources(
                message_id=draft.message_id,
                sources=published,
                subject=mapping.subject if mapping else subject,
                adapters=adapters,
                recent=recent,
                mapping=mapping,
            )
            if published
            else []
        )
    except EmailOpsError as exc:  # the bucket or the table unreachable: nothing was checked
        failed = Finding(
            ERROR,
            "check",
            f"the check could not run: {exc.describe()}",
            draft.key,
            organization_of_key(draft.key),
        )
        return DraftVerdict([failed], frozenset(), "The check could not run.")
    inherited = frozenset(_identity(f) for f in warnings_of(before))
    return DraftVerdict(findings, inherited, _basis(draft.message_id, sends, adapters=adapters))


def check_draft(*, draft: TemplateDraft, adapters: Container) -> list[Finding]:
    """The draft's findings (``draft_verdict`` has them judged against the published version)."""
    return draft_verdict(draft=draft, adapters=adapters).findings
