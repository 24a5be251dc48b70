"""Reads for the mapping pages: DynamoDB mappings, S3 templates, the audit trail, previews."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse

from emailops.core.compose import subject_source_for
from emailops.core.errors import EmailOpsError
from emailops.core.ports import TemplateMapping, custom_template_key, default_template_key
from templates_admin.mappings.variables import (
    VariableReport,
    sample_context,
    template_manifest,
    variable_report,
)
from templates_admin.models import EmailAction, MappingChange

if TYPE_CHECKING:
    from emailops.aws.mappings import DynamoMappingStore
    from emailops.aws.s3 import S3TemplateStore
    from emailops.container import Container
    from emailops.core.compose import Composer
    from emailops.core.rendering import Renderer

logger = logging.getLogger(__name__)

_CUSTOM_KEY = re.compile(r"^custom/O(\d+)/([^/]+)$")
_DEFAULT_KEY = re.compile(r"^default/([^/]+)$")
AUDITED_FIELDS = ("template_file", "subject", "category")
# A field older snapshots lack: absent there is its default, not a change.
_SNAPSHOT_DEFAULTS = {"category": ""}
T = TypeVar("T")


# --- Mappings ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MappingRow:
    mapping: TemplateMapping
    override_orgs: tuple[str, ...]  # organizations with a branded copy of the template file

    @property
    def updated_at(self) -> datetime | None:
        return parse_timestamp(self.mapping.updated_at)


def parse_timestamp(value: str) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if value else None
    except ValueError:
        return None


def mapping_get(*, message_id: str, mapping_store: DynamoMappingStore) -> TemplateMapping | None:
    return mapping_store.get_mapping(message_id)


def override_index(*, template_store: S3TemplateStore) -> dict[str, tuple[str, ...]]:
    """template file → organizations overriding it, from ONE listing of ``custom/``."""
    orgs: dict[str, set[str]] = {}
    for key in template_store.list_keys("custom/"):
        if match := _CUSTOM_KEY.match(key):
            orgs.setdefault(match[2], set()).add(match[1])
    return {file: tuple(sorted(ids, key=int)) for file, ids in orgs.items()}


def default_template_files(*, template_store: S3TemplateStore) -> list[str]:
    """Files under ``default/`` (offered as suggestions in the mapping form)."""
    keys = template_store.list_keys("default/")
    return sorted(match[1] for key in keys if (match := _DEFAULT_KEY.match(key)))


def mapping_list(
    *, query: str = "", mapping_store: DynamoMappingStore, template_store: S3TemplateStore
) -> list[MappingRow]:
    """Every mapping sorted by messageId, narrowed to those whose messageId, file, subject or
    overriding organizations contain ``query`` (case-insensitive)."""
    overrides = override_index(template_store=template_store)
    needle = query.strip().lower()
    rows = []
    for mapping in mapping_store.list_mappings():
        row = MappingRow(mapping=mapping, override_orgs=overrides.get(mapping.template_file, ()))
        haystack = " ".join(
            [mapping.message_id, mapping.template_file, mapping.subject]
            + [f"O{org}" for org in row.override_orgs]
        ).lower()
        if needle in haystack:
            rows.append(row)
    return sorted(rows, key=lambda r: r.mapping.message_id)


# --- Audit trail -------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldChange:
    field: str
    before: Any
    after: Any


@dataclass(frozen=True)
class HistoryEntry:
    change: MappingChange
    fields: tuple[FieldChange, ...]


def mapping_history(*, message_id: str, limit: int = 50) -> list[HistoryEntry]:
    """Newest first; each entry lists only the fields the change touched."""
    changes = MappingChange.objects.filter(message_id=message_id).select_related("user")[:limit]
    entries = []
    for change in changes:
        before, after = change.before or {}, change.after or {}

        def value(snapshot: dict[str, Any], name: str) -> Any:
            return snapshot.get(name, _SNAPSHOT_DEFAULTS.get(name))

        fields = tuple(
            FieldChange(name, value(before, name), value(after, name))
            for name in AUDITED_FIELDS
            if value(before, name) != value(after, name)
        )
        entries.append(HistoryEntry(change=change, fields=fields))
    return entries


# --- Templates and preview ---------------------------------------------------------------------


def template_key(*, mapping: TemplateMapping, organization_id: str | None) -> str:
    if organization_id is None:
        return default_template_key(mapping.template_file)
    return custom_template_key(organization_id, mapping.template_file)


def template_source(
    *, mapping: TemplateMapping, organization_id: str | None, template_store: S3TemplateStore
) -> str | None:
    """The raw source of the default (``organization_id=None``) or of one branded override."""
    key = template_key(mapping=mapping, organization_id=organization_id)
    return template_store.read_template(key)


@dataclass(frozen=True)
class SourceLine:
    number: int
    text: str
    is_error: bool


@dataclass(frozen=True)
class RenderProblem:
    message: str
    line: int | None = None
    excerpt: tuple[SourceLine, ...] = ()


def render_problem(exc: Exception, source: str | None, *, around: int = 2) -> RenderProblem:
    """The error as a reader needs it: the message plus the template lines around its line."""
    message = exc.describe() if isinstance(exc, EmailOpsError) else f"unexpected error: {exc!r}"
    line = getattr(exc, "line", None)
    if not source or not line:
        return RenderProblem(message=message, line=line)
    lines = source.splitlines()
    first, last = max(1, line - around), min(len(lines), line + around)
    excerpt = tuple(SourceLine(n, lines[n - 1], n == line) for n in range(first, last + 1))
    return RenderProblem(message=message, line=line, excerpt=excerpt)


@dataclass(frozen=True)
class PreviewPane:
    label: str
    organization_id: str | None
    template_key: str = ""
    is_override: bool = False
    subject: str | None = None
    subject_problem: RenderProblem | None = None
    html: str | None = None
    body_problem: RenderProblem | None = None
    missing: tuple[str, ...] = ()
    variables: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Preview:
    mapping: TemplateMapping
    context: dict[str, Any]
    panes: tuple[PreviewPane, ...]
    report: VariableReport
    subject_source: str


def _attempt(action: Callable[[], T], source: str | None) -> tuple[T | None, RenderProblem | None]:
    """Run one render step; any failure becomes a RenderProblem, so a broken template (or a bug
    it trips in the renderer) shows on the page instead of breaking it."""
    try:
        return action(), None
    except EmailOpsError as exc:
        return None, render_problem(exc, source)
    except Exception as exc:  # the preview must survive any template
        logger.exception("preview render failed unexpectedly")
        return None, render_problem(exc, source)


def _preview_pane(
    *,
    mapping: TemplateMapping,
    organization_id: str | None,
    subject_source: str,
    context: dict[str, Any],
    composer: Composer,
    renderer: Renderer,
) -> PreviewPane:
    label = "Default" if organization_id is None else f"Organization {organization_id}"
    # The consumer's own resolution: the branded copy if the organization has one, else default.
    found, problem = _attempt(
        lambda: composer.template_for(mapping.template_file, organization_id), None
    )
    if found is None:
        return PreviewPane(label=label, organization_id=organization_id, body_problem=problem)
    key, source = found
    subject, subject_problem = _attempt(
        lambda: renderer.render_subject(subject_source, context, name="subject"), subject_source
    )
    body, body_problem = _attempt(lambda: renderer.render_body(source, context, name=key), source)
    variables, _ = _attempt(lambda: renderer.variables(source, name=key), source)
    missing = (subject.missing if subject else ()) + (body.missing if body else ())
    return PreviewPane(
        label=label,
        organization_id=organization_id,
        template_key=key,
        is_override=key != default_template_key(mapping.template_file),
        subject=subject.text if subject else None,
        subject_problem=subject_problem,
        html=body.text if body else None,
        body_problem=body_problem,
        missing=tuple(dict.fromkeys(missing)),
        variables=frozenset(variables or ()),
    )


def preview_render(
    *,
    mapping: TemplateMapping,
    organization_id: str | None,
    context: dict[str, Any],
    adapters: Container,
) -> Preview:
    """Render the default and (when an organization is chosen) its branded email side by side.

    ``context`` is used as given: callers put the organization in ``organizationId`` themselves.
    """
    subject_source = subject_source_for(mapping, context)
    composer, renderer = adapters.composer(), adapters.renderer
    panes = [
        _preview_pane(
            mapping=mapping,
            organization_id=org,
            subject_source=subject_source,
            context=context,
            composer=composer,
            renderer=renderer,
        )
        for org in ([None] if organization_id is None else [None, organization_id])
    ]
    subject_variables, _ = _attempt(lambda: renderer.variables(subject_source), None)
    used = set(subject_variables or ()).union(*(pane.variables for pane in panes))
    report = variable_report(
        expected=template_manifest(adapters=adapters).get(mapping.message_id),
        given=context,
        used=used,
        rendered_empty=[name for pane in panes for name in pane.missing],
    )
    return Preview(
        mapping=mapping,
        context=context,
        panes=tuple(panes),
        report=report,
        subject_source=subject_source,
    )


def preview_initial_context(*, mapping: TemplateMapping, adapters: Container) -> dict[str, Any]:
    """A sample value for each variable the manifest lists (else each the default template reads)."""
    names = template_manifest(adapters=adapters).get(mapping.message_id)
    read, _ = _attempt(
        lambda: template_source(
            mapping=mapping, organization_id=None, template_store=adapters.template_store
        ),
        None,
    )
    source = read or ""
    if names is None:
        names, _ = _attempt(lambda: adapters.renderer.variables(source), None)
    return sample_context(names or (), sources=[source])


# --- Test sends --------------------------------------------------------------------------------


def journal_entry_url(key: str) -> str:
    """The journal page for one row (built by the journal feature at this agreed path)."""
    journal = reverse("admin:templates_admin_emailjournalpage_changelist")
    return f"{journal}entry/{quote(key, safe='')}/"


@dataclass(frozen=True)
class SentTest:
    action: EmailAction
    status: str | None  # the journal row's Status; None until the consumer has claimed it
    journal_url: str | None


def sent_test_list(
    *, user: AbstractBaseUser, message_id: str, adapters: Container, limit: int = 5
) -> list[SentTest]:
    """The user's latest test sends of this messageId, with their journal status when known.
    ``adapters``, not the journal reader: an unset JOURNAL_TABLE is one of the failures that must
    not hide the list, so the reader is reached under the same guard as the read."""
    actions = EmailAction.objects.filter(
        kind=EmailAction.Kind.SEND_TEST, user=user, message_id=message_id
    )[:limit]
    sends = []
    for action in actions:
        try:
            row = adapters.journal_reader.read(action.journal_key)
        except (EmailOpsError, ImproperlyConfigured):
            row = None  # the journal being unreachable must not hide the list
        status = row.status if row else None
        url = journal_entry_url(action.journal_key) if row else None
        sends.append(SentTest(action=action, status=status, journal_url=url))
    return sends
