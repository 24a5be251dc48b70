"""The replay preview of a draft: the published email and the draft's side by side, for the default
and every organization with a branded copy, rendered with the manifest's sample context or the real
(masked) context of one of the last sends of the messageId, with text diffs and a variable report.

Contexts from the journal are masked with ``JOURNAL_SENSITIVE_KEYS`` the moment they are read
(``templates_admin.display.mask_context``): nothing here ever holds them unmasked.
"""

from __future__ import annotations

import contextlib
import difflib
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured

from emailops.core.compose import html_to_text, subject_source_for
from emailops.core.contract import organization_id_of
from emailops.core.errors import EmailOpsError
from emailops.core.ports import TemplateMapping, custom_template_key, default_template_key
from emailops.core.template_findings import organization_of_key
from emailops.core.template_source import TemplateSourceError, publishable
from templates_admin.display import mask_context
from templates_admin.drafts.samples import sample_context_for
from templates_admin.mappings import selectors as mapping_selectors
from templates_admin.mappings.variables import CONSUMER_KEYS

if TYPE_CHECKING:
    from emailops.aws.s3 import S3TemplateStore
    from emailops.container import Container
    from emailops.core.rendering import Renderer
    from templates_admin.models import TemplateDraft

__all__ = [
    "DEFAULT_REPLAY_COUNT",
    "DiffLine",
    "DraftPreview",
    "PreviewPair",
    "RecentSend",
    "RecentSends",
    "RenderSide",
    "ReplayVariableReport",
    "diff_lines",
    "draft_preview",
    "recent_sends",
]

DEFAULT_REPLAY_COUNT = 20
MAX_REPLAY_COUNT = 100


# --- Recent sends from the journal -------------------------------------------------------------


@dataclass(frozen=True)
class RecentSend:
    key: str  # the journal row's Id
    timestamp: int | None
    organization: str | None
    context: dict[str, Any]  # masked

    @property
    def label(self) -> str:
        when = (
            time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.timestamp))
            if self.timestamp
            else "unknown time"
        )
        where = f"O{self.organization}" if self.organization else "default"
        return f"{when} · {where} · {self.key[:12]}"


@dataclass(frozen=True)
class RecentSends:
    sends: list[RecentSend] = field(default_factory=list)
    partial: bool = False  # the bounded scan stopped before the end of the table
    error: str = ""

    def get(self, key: str) -> RecentSend | None:
        return next((s for s in self.sends if s.key == key), None)


def recent_sends(
    *, message_id: str, adapters: Container, limit: int = DEFAULT_REPLAY_COUNT
) -> RecentSends:
    """The last ``limit`` sends of ``message_id``, newest first, contexts masked.

    The journal has no messageId index, so this is a bounded Scan (``OPS_SCAN_MAX_ITEMS`` items
    read, as the bulk resend's); ``partial`` says when the bound cut it short. The scanner is
    reached under the guard: an unset JOURNAL_TABLE is a page note, as an unreachable table is.
    """
    limit = max(1, min(limit, MAX_REPLAY_COUNT))
    try:
        page = adapters.journal_scan.rows_of_message(
            message_id=message_id,
            since=0,
            until=int(time.time()),
            max_read=adapters.config.ops.scan_max_items,
        )
    except (EmailOpsError, ImproperlyConfigured) as exc:
        reason = exc.describe() if isinstance(exc, EmailOpsError) else str(exc)
        return RecentSends(error=f"the journal could not be read: {reason}")
    rows = [row for row in page.rows if row.message_id == message_id]
    rows.sort(key=lambda row: row.timestamp or 0, reverse=True)
    sends = []
    for row in rows[:limit]:
        context = mask_context(dict(row.context), adapters.config.console.sensitive_keys)
        sends.append(
            RecentSend(
                key=row.key,
                timestamp=row.timestamp,
                organization=organization_id_of(context),
                context=context,
            )
        )
    return RecentSends(sends=sends, partial=page.next_key is not None)


# --- Renders and diffs -------------------------------------------------------------------------


@dataclass(frozen=True)
class RenderSide:
    key: str | None  # the template used (None: no such file)
    subject: str | None = None
    html: str | None = None
    text: str | None = None
    problem: str = ""  # everything that went wrong, for the pane
    subject_problem: str = ""  # the subject did not render (``subject`` is None)
    body_problem: str = ""  # the body did not render (``html`` and ``text`` are None)


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "add" | "del" | "hunk" | "same"
    text: str


def diff_lines(diff: str | Iterable[str]) -> list[DiffLine]:
    """A unified diff as classed lines for the page (file headers dropped)."""
    lines = diff.splitlines() if isinstance(diff, str) else diff
    out = []
    for line in lines:
        if line.startswith(("---", "+++")):
            continue
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "same")
        out.append(DiffLine(kind, line))
    return out


def _unrendered_note(published: str, draft: str) -> str:
    """Why there is no diff when a side could not be rendered (its problem), else "". Diffing
    what did render against nothing would show every line of it removed (or added)."""
    if published and draft:
        return (
            f"Neither version renders (the published one: {published}; the draft: {draft}), "
            "so there is nothing to compare."
        )
    if draft:
        return f"The draft does not render: {draft}; fix it to see the difference."
    if published:
        return (
            f"The published version does not render: {published}; there is nothing to compare "
            "the draft with."
        )
    return ""


def _diff(old: str | None, new: str | None, *, name: str) -> list[DiffLine]:
    return diff_lines(
        difflib.unified_diff(
            (old or "").splitlines(),
            (new or "").splitlines(),
            fromfile=f"published {name}",
            tofile=f"draft {name}",
            lineterm="",
            n=2,
        )
    )


@dataclass(frozen=True)
class PreviewPair:
    organization: str | None
    published: RenderSide
    draft: RenderSide
    subject_diff: list[DiffLine]
    html_diff: list[DiffLine]
    text_diff: list[DiffLine]
    # Set (and the diffs below it empty) when a side's subject or body could not be rendered.
    subject_note: str = ""
    body_note: str = ""  # for the HTML and the plain-text diff

    @property
    def label(self) -> str:
        return "Default" if self.organization is None else f"Organization {self.organization}"

    @property
    def changed(self) -> bool:
        """Shown as changed unless both versions rendered alike (one that does not render
        cannot be called unchanged)."""
        diffs = self.subject_diff or self.html_diff or self.text_diff
        return bool(diffs or self.subject_note or self.body_note)


@dataclass(frozen=True)
class ReplayVariableReport:
    sends: int  # how many recent sends the report compares against
    draft_unprovided: dict[str, int]  # the draft reads it; in how many sends it was absent
    provided_unused: tuple[str, ...]  # the sends give it; neither version reads it


@dataclass(frozen=True)
class DraftPreview:
    draft: Any
    mapping: TemplateMapping | None
    pairs: list[PreviewPair]
    context: dict[str, Any]  # masked, as rendered (organizationId set per pane)
    sends: RecentSends
    selected: RecentSend | None  # None: the manifest's sample context
    report: ReplayVariableReport


def _render(
    renderer: Renderer,
    key: str | None,
    source: str | None,
    subject: str | None,
    context: dict[str, Any],
) -> RenderSide:
    if key is None or source is None:
        return RenderSide(key=key, problem="no such template")
    subject_problem = ""
    subject_text = None
    if subject is not None:
        try:
            subject_text = renderer.render_subject(
                subject_source_for(TemplateMapping("", "", subject), context), context
            ).text
        except EmailOpsError as exc:
            subject_problem = exc.describe()
    try:
        html = renderer.render_body(source, context, name=key).text
    except EmailOpsError as exc:
        body_problem = exc.describe()
        return RenderSide(
            key=key,
            subject=subject_text,
            problem="; ".join(p for p in (subject_problem, body_problem) if p),
            subject_problem=subject_problem,
            body_problem=body_problem,
        )
    return RenderSide(
        key=key,
        subject=subject_text,
        html=html,
        text=html_to_text(html),
        problem=subject_problem,
        subject_problem=subject_problem,
    )


def _resolve(files: Mapping[str, str], template_file: str, organization: str | None) -> str | None:
    """The consumer's resolution: the organization's branded copy if any, else the default."""
    if organization is not None:
        key = custom_template_key(organization, template_file)
        if key in files:
            return key
    key = default_template_key(template_file)
    return key if key in files else None


def _published_files(
    draft: Any, mapping: TemplateMapping | None, *, store: S3TemplateStore
) -> tuple[dict[str, str], list]:
    """The published sources of the file the draft belongs to, and the organizations to show."""
    if mapping is None:
        source = store.read_template(draft.key)
        return ({draft.key: source} if source is not None else {}), [organization_of_key(draft.key)]
    orgs = list(
        mapping_selectors.override_index(template_store=store).get(mapping.template_file, ())
    )
    files = {}
    for org in [None, *orgs]:
        key = mapping_selectors.template_key(mapping=mapping, organization_id=org)
        source = store.read_template(key)
        if source is not None:
            files[key] = source
    draft_org = organization_of_key(draft.key)
    if draft_org is not None and draft_org not in orgs:  # a new organization's branded copy
        orgs.append(draft_org)
    return files, [None, *sorted(orgs, key=int)]


def _variables(sources: Iterable[str | None], *, renderer: Renderer) -> set[str]:
    found: set[str] = set()
    for source in sources:
        if source:
            with contextlib.suppress(EmailOpsError):  # the render shows the error
                found |= renderer.variables(source)
    return found


def draft_preview(
    *,
    draft: TemplateDraft,
    adapters: Container,
    send_key: str | None = None,
    count: int = DEFAULT_REPLAY_COUNT,
) -> DraftPreview:
    """Published vs draft for the default and every branded organization, rendered with the send
    ``send_key`` (one of the last ``count``) or, when None, the manifest's sample context."""
    mapping = (
        mapping_selectors.mapping_get(
            message_id=draft.message_id, mapping_store=adapters.mapping_store
        )
        if draft.message_id
        else None
    )
    published, orgs = _published_files(draft, mapping, store=adapters.template_store)
    drafted = dict(published)
    if draft.source:  # as it would be published: MJML compiled (an error shows in the check)
        try:
            drafted[draft.key] = publishable(draft.key, draft.source)
        except TemplateSourceError:
            drafted[draft.key] = draft.source
    template_file = mapping.template_file if mapping else draft.key.rsplit("/", 1)[-1]
    published_subject = mapping.subject if mapping else None
    draft_subject = (draft.subject or published_subject) if mapping else None

    sends = (
        recent_sends(message_id=draft.message_id, adapters=adapters, limit=count)
        if draft.message_id
        else RecentSends()
    )
    selected = sends.get(send_key) if send_key else None
    if selected is not None:
        base = dict(selected.context)
    else:
        base = sample_context_for(
            message_id=draft.message_id, sources=drafted, subject=draft_subject, adapters=adapters
        )
    renderer = adapters.renderer

    pairs = []
    for org in orgs:
        context = dict(base)
        if org is not None:
            context["organizationId"] = org
        old_key = (
            _resolve(published, template_file, org)
            if mapping
            else (draft.key if published else None)
        )
        new_key = _resolve(drafted, template_file, org) if mapping else draft.key
        old = _render(renderer, old_key, published.get(old_key or ""), published_subject, context)
        new = _render(renderer, new_key, drafted.get(new_key or ""), draft_subject, context)
        subject_note = _unrendered_note(old.subject_problem, new.subject_problem)
        body_note = _unrendered_note(old.body_problem, new.body_problem)
        pairs.append(
            PreviewPair(
                organization=org,
                published=old,
                draft=new,
                subject_diff=[]
                if subject_note
                else _diff(old.subject, new.subject, name="subject"),
                html_diff=[] if body_note else _diff(old.html, new.html, name="HTML"),
                text_diff=[] if body_note else _diff(old.text, new.text, name="text"),
                subject_note=subject_note,
                body_note=body_note,
            )
        )

    draft_used = _variables([*drafted.values(), draft_subject], renderer=renderer)
    published_used = _variables([*published.values(), published_subject], renderer=renderer)
    contexts = [s.context for s in sends.sends]
    provided = set().union(*(c.keys() for c in contexts)) if contexts else set()
    report = ReplayVariableReport(
        sends=len(contexts),
        draft_unprovided={
            name: absent
            for name in sorted(draft_used - {"subject"})
            if (absent := sum(1 for c in contexts if name not in c))
        },
        provided_unused=tuple(sorted(provided - draft_used - published_used - CONSUMER_KEYS)),
    )
    return DraftPreview(
        draft=draft,
        mapping=mapping,
        pairs=pairs,
        context=base,
        sends=sends,
        selected=selected,
        report=report,
    )
