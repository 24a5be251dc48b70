"""Template check: every mapping with its default template and with each organization's branded
copy (``custom/O{id}/{file}`` present), through the one check engine the drafts use
(``templates_admin.drafts.check``: compile and render errors, Gmail's size limit, links, images,
the subject), with the manifest's sample values. Errors fail the check; the engine's warnings and
the variable mismatches between the manifest and the templates are warnings.

No side effects: a retried job simply checks again. ``manage.py check_templates`` runs the same
function and exits non-zero on errors.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from emailops.core.errors import EmailOpsError
from emailops.core.events import EventLog
from jobs import engine
from jobs.models import Job
from templates_admin.drafts.check import Finding, check_sources, errors_of, warnings_of
from templates_admin.mappings import selectors as mapping_selectors
from templates_admin.mappings.variables import template_manifest, variable_report

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = ["TemplateCheck", "template_check", "template_check_daily", "template_check_run"]

log = EventLog(logging.getLogger("templates_admin.jobs"))


@dataclass(frozen=True)
class TemplateCheck:
    """One render: a mapping with the default template (organization None) or a branded one."""

    message_id: str
    organization: str | None
    template_key: str
    errors: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)  # the check's warnings (size, links, ...)
    findings: list[dict[str, Any]] = field(default_factory=list)  # every Finding, as a dict
    in_manifest: bool = True
    missing_from_template: list[str] = field(default_factory=list)  # manifest lists, none read
    unknown_to_manifest: list[str] = field(default_factory=list)  # read, manifest lacks
    rendered_empty: list[str] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        found = list(self.checks)
        if not self.in_manifest:
            found.append("the manifest has no entry for this messageId")
        if self.missing_from_template:
            found.append(f"manifest variables unused: {', '.join(self.missing_from_template)}")
        if self.unknown_to_manifest:
            found.append(f"variables not in the manifest: {', '.join(self.unknown_to_manifest)}")
        if self.rendered_empty:
            found.append(f"rendered empty: {', '.join(self.rendered_empty)}")
        return found


def _finding_text(finding: Finding) -> str:
    line = f" (line {finding.line})" if finding.line else ""
    return f"{finding.message}{line}"


def _check_one(
    mapping, organization: str | None, manifest: dict[str, list[str]], adapters: Container
) -> TemplateCheck:
    composer = adapters.composer()
    try:
        key, source = composer.template_for(mapping.template_file, organization)
    except EmailOpsError as exc:
        return TemplateCheck(
            message_id=mapping.message_id,
            organization=organization,
            template_key=mapping_selectors.template_key(
                mapping=mapping, organization_id=organization
            ),
            errors=[exc.describe()],
        )
    # The one engine the drafts and the CLI use; the daily run has no recent sends to compare.
    findings = check_sources(
        message_id=mapping.message_id,
        sources={key: source},
        subject=mapping.subject,
        adapters=adapters,
        mapping=mapping,
    )
    context = mapping_selectors.preview_initial_context(mapping=mapping, adapters=adapters)
    if organization is not None:
        context["organizationId"] = organization
    renderer = adapters.renderer
    used: set[str] = set()
    rendered_empty: list[str] = []
    for text, name in ((mapping.subject, "subject"), (source, key)):
        try:
            used |= renderer.variables(text, name=name)
            rendered_empty += (
                renderer.render_subject(text, context).missing
                if name == "subject"
                else renderer.render_body(text, context, name=key).missing
            )
        except EmailOpsError:
            pass  # already an error finding
    report = variable_report(
        expected=manifest.get(mapping.message_id),
        given=context,
        used=used,
        rendered_empty=rendered_empty,
    )
    return TemplateCheck(
        message_id=mapping.message_id,
        organization=organization,
        template_key=key,
        errors=[_finding_text(f) for f in errors_of(findings)],
        checks=[_finding_text(f) for f in warnings_of(findings)],
        findings=[asdict(f) for f in findings],
        in_manifest=report.in_manifest,
        missing_from_template=list(report.unused),
        unknown_to_manifest=list(report.unknown),
        rendered_empty=list(report.rendered_empty),
    )


def template_check(
    *,
    adapters: Container,
    on_total: Callable[[int], None] = lambda n: None,
    on_checked: Callable[[], None] = lambda: None,
) -> list[TemplateCheck]:
    """Every mapping, rendered with its default template and each branded copy of its file."""
    manifest = template_manifest(adapters=adapters)
    rows = mapping_selectors.mapping_list(
        mapping_store=adapters.mapping_store, template_store=adapters.template_store
    )
    pairs = [(row.mapping, org) for row in rows for org in (None, *row.override_orgs)]
    on_total(len(pairs))
    checks = []
    for mapping, organization in pairs:
        checks.append(_check_one(mapping, organization, manifest, adapters))
        on_checked()
    return checks


def summary(checks: list[TemplateCheck]) -> dict[str, Any]:
    return {
        "renders": len(checks),
        "errors": sum(len(c.errors) for c in checks),
        "warnings": sum(len(c.warnings) for c in checks),
        "checks": [asdict(c) | {"warnings": c.warnings} for c in checks],
    }


def template_check_run(job: Job, progress, *, adapters: Container) -> dict[str, Any]:
    progress.set_done(0)  # nothing to resume: a retry checks everything again
    checks = template_check(
        adapters=adapters, on_total=progress.set_total, on_checked=progress.advance
    )
    return summary(checks)


def template_check_daily(*, adapters: Container) -> Job:
    """A template check in the system's name, run inline (beat already runs in a worker); the
    console registers it as periodic work (``monitoring.periodic``)."""
    job = engine.job_create(
        kind=Job.Kind.TEMPLATE_CHECK, inputs={}, user=None, origin="beat", dispatch=False
    )
    job = engine.job_run(job_id=job.pk, adapters=adapters)
    errors = (job.result or {}).get("errors", 0)
    if job.state == Job.State.FAILED or errors:
        log.error("templates.check_failed", job=job.pk, errors=errors, error=job.error)
    return job
