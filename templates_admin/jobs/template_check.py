"""Template check: render every mapping with its default template and with each organization's
branded copy (``custom/O{id}/{file}`` present), using the manifest's sample values, the way the
preview does. Render errors (subject or body) are errors; variable mismatches between the
manifest and the templates are warnings.

No side effects: a retried job simply checks again. ``manage.py check_templates`` runs the same
function and exits non-zero on errors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from emailops import wiring
from emailops.core.errors import EmailOpsError
from templates_admin.mappings import selectors as mapping_selectors
from templates_admin.mappings.variables import template_manifest, variable_report
from templates_admin.models import Job

__all__ = ["TemplateCheck", "template_check", "template_check_run"]


@dataclass(frozen=True)
class TemplateCheck:
    """One render: a mapping with the default template (organization None) or a branded one."""

    message_id: str
    organization: str | None
    template_key: str
    errors: list[str] = field(default_factory=list)
    in_manifest: bool = True
    missing_from_template: list[str] = field(default_factory=list)  # manifest lists, none read
    unknown_to_manifest: list[str] = field(default_factory=list)  # read, manifest lacks
    rendered_empty: list[str] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        found = []
        if not self.in_manifest:
            found.append("the manifest has no entry for this messageId")
        if self.missing_from_template:
            found.append(f"manifest variables unused: {', '.join(self.missing_from_template)}")
        if self.unknown_to_manifest:
            found.append(f"variables not in the manifest: {', '.join(self.unknown_to_manifest)}")
        if self.rendered_empty:
            found.append(f"rendered empty: {', '.join(self.rendered_empty)}")
        return found


def _problem_text(label: str, problem) -> str:
    line = f" (line {problem.line})" if problem.line else ""
    return f"{label}: {problem.message}{line}"


def _check_one(mapping, organization: str | None, manifest: dict[str, list[str]]) -> TemplateCheck:
    context = mapping_selectors.preview_initial_context(mapping=mapping)
    if organization is not None:
        context["organizationId"] = organization
    preview = mapping_selectors.preview_render(
        mapping=mapping, organization_id=organization, context=context
    )
    pane = preview.panes[-1]
    errors = [
        _problem_text(label, problem)
        for label, problem in (("subject", pane.subject_problem), ("body", pane.body_problem))
        if problem is not None
    ]
    try:
        subject_variables = wiring.renderer().variables(preview.subject_source)
    except EmailOpsError:
        subject_variables = set()  # already an error above
    report = variable_report(
        expected=manifest.get(mapping.message_id),
        given=context,
        used=set(subject_variables) | set(pane.variables),
        rendered_empty=pane.missing,
    )
    return TemplateCheck(
        message_id=mapping.message_id,
        organization=organization,
        template_key=pane.template_key,
        errors=errors,
        in_manifest=report.in_manifest,
        missing_from_template=list(report.unused),
        unknown_to_manifest=list(report.unknown),
        rendered_empty=list(report.rendered_empty),
    )


def template_check(
    *,
    on_total: Callable[[int], None] = lambda n: None,
    on_checked: Callable[[], None] = lambda: None,
) -> list[TemplateCheck]:
    """Every mapping, rendered with its default template and each branded copy of its file."""
    manifest = template_manifest()
    rows = mapping_selectors.mapping_list()
    pairs = [(row.mapping, org) for row in rows for org in (None, *row.override_orgs)]
    on_total(len(pairs))
    checks = []
    for mapping, organization in pairs:
        checks.append(_check_one(mapping, organization, manifest))
        on_checked()
    return checks


def summary(checks: list[TemplateCheck]) -> dict[str, Any]:
    return {
        "renders": len(checks),
        "errors": sum(len(c.errors) for c in checks),
        "warnings": sum(len(c.warnings) for c in checks),
        "checks": [asdict(c) | {"warnings": c.warnings} for c in checks],
    }


def template_check_run(job: Job, progress) -> dict[str, Any]:
    progress.set_done(0)  # nothing to resume: a retry checks everything again
    checks = template_check(on_total=progress.set_total, on_checked=progress.advance)
    return summary(checks)
