"""The template check, Django side: gather the sources, the subject and the contexts, then run the
engine in ``emailops.core.template_check`` on every (file x organization) render.

Used by the draft pages, ``manage.py templates check`` (through the publish service) and the daily
``check_templates`` (``templates_admin.jobs.template_check``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from emailops import container
from emailops.core.errors import EmailOpsError
from emailops.core.ports import default_template_key
from emailops.core.template_check import (
    ERROR,
    WARNING,
    Finding,
    check_render,
    dedupe,
    missing_in_contexts,
    organization_of_key,
)
from templates_admin.mappings import selectors as mapping_selectors
from templates_admin.mappings.variables import sample_context, template_manifest

if TYPE_CHECKING:
    from templates_admin.models import TemplateDraft

__all__ = [
    "ERROR",
    "WARNING",
    "Finding",
    "check_draft",
    "check_sources",
    "draft_sources",
    "errors_of",
    "sample_context_for",
    "warnings_of",
]


def errors_of(findings: Sequence[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == ERROR]


def warnings_of(findings: Sequence[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == WARNING]


def _variables(source: str, *, name: str) -> set[str]:
    try:
        return container.current().renderer.variables(source, name=name)
    except EmailOpsError:
        return set()  # a source that does not compile is reported as an error already


def sample_context_for(
    *, message_id: str, sources: Mapping[str, str], subject: str | None
) -> dict[str, Any]:
    """The manifest's sample values for ``message_id``; without a manifest entry, a sample for
    every variable the sources and the subject read."""
    names = template_manifest().get(message_id) if message_id else None
    if names is None:
        names = set().union(*(_variables(s, name=k) for k, s in sources.items()), set())
        if subject:
            names |= _variables(subject, name="subject")
    return sample_context(names, sources=[*sources.values(), subject or ""])


def _variable_line(source: str, name: str) -> int | None:
    match = re.search(rf"(?<![\w]){re.escape(name)}(?!\w)", source)
    return source.count("\n", 0, match.start()) + 1 if match else None


def _missing_variable_findings(
    *, key: str, source: str, subject: str | None, recent: Sequence[Mapping[str, Any]]
) -> list[Finding]:
    if not recent:
        return []
    used = _variables(source, name=key) | (
        _variables(subject, name="subject") if subject else set()
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
    contexts: Sequence[Mapping[str, Any]] | None = None,
    recent: Sequence[Mapping[str, Any]] | None = None,
) -> list[Finding]:
    """Check each ``key -> source`` (``default/...`` renders as the default, ``custom/O{org}/...``
    as that organization) with ``subject`` (None: no subject, a file without a mapping).

    ``contexts``: the contexts to render with (real sends' contexts, masked); None renders with
    the manifest's sample context. The "missing in recent sends" warning compares against
    ``contexts`` when given, else against ``recent`` (the daily check passes neither).
    """
    renderer = container.current().renderer
    if contexts:
        renders: list[Mapping[str, Any]] = list(contexts)
        recent = list(contexts)
    else:
        renders = [sample_context_for(message_id=message_id, sources=sources, subject=subject)]
    found: list[Finding] = []
    for key, source in sources.items():
        organization = organization_of_key(key)
        keyed = renders
        if organization is not None and not contexts:
            keyed = [{**c, "organizationId": organization} for c in renders]
        found += check_render(
            renderer=renderer,
            key=key,
            source=source,
            subject_source=subject,
            contexts=keyed,
            organization=organization,
        )
        found += _missing_variable_findings(
            key=key, source=source, subject=subject, recent=recent or ()
        )
    return dedupe(found)


def draft_sources(*, draft: TemplateDraft) -> tuple[dict[str, str], str | None]:
    """What a draft would publish, as renders: its own file when it changes one, else (a
    subject-only draft) the mapping's default file and every branded copy; and the subject."""
    mapping = (
        mapping_selectors.mapping_get(message_id=draft.message_id) if draft.message_id else None
    )
    subject = draft.subject or (mapping.subject if mapping else None)
    if draft.source:
        return {draft.key: draft.source}, subject
    store = container.current().template_store
    sources: dict[str, str] = {}
    if mapping is not None:
        orgs = mapping_selectors.override_index().get(mapping.template_file, ())
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


def check_draft(
    *,
    draft: TemplateDraft,
    contexts: list[dict] | None = None,
    recent: list[dict] | None = None,
) -> list[Finding]:
    """Every (file x organization) render of ``draft``. ``contexts`` None: the sample context,
    plus the recent sends' (masked) contexts for the "missing in recent sends" warning: ``recent``
    when the caller has read them already (the preview page), else the last sends, read here."""
    from templates_admin.drafts.preview import recent_sends

    try:
        sources, subject = draft_sources(draft=draft)
        if recent is None and contexts is None and draft.message_id:
            recent = [send.context for send in recent_sends(message_id=draft.message_id).sends]
        return check_sources(
            message_id=draft.message_id,
            sources=sources,
            subject=subject,
            contexts=contexts,
            recent=recent,
        )
    except EmailOpsError as exc:  # the bucket or the table unreachable: nothing was checked
        return [
            Finding(
                ERROR,
                "check",
                f"the check could not run: {exc.describe()}",
                draft.key,
                organization_of_key(draft.key),
            )
        ]
