"""The template check: every mapping with its default and branded templates, errors and mismatches,
and `manage.py check_templates` exiting non-zero on errors."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from emailops import container
from jobs.engine import job_create, job_run
from jobs.models import Job

pytestmark = pytest.mark.django_db


def checks_by_render(report: dict) -> dict[tuple[str, str | None], dict]:
    return {(c["message_id"], c["organization"]): c for c in report["checks"]}


def test_the_samples_render_cleanly_with_their_branded_copy(aws, make_user):
    aws.load_samples()
    job = job_create(
        kind=Job.Kind.TEMPLATE_CHECK, inputs={}, user=make_user("Template owners"), dispatch=False
    )
    job = job_run(job_id=job.pk, adapters=container.current())
    assert job.state == Job.State.SUCCEEDED, job.error
    checks = checks_by_render(job.result)
    assert ("dataset-publication-accepted", "367") in checks  # the branded override
    assert job.result["renders"] == len(checks) == job.total == job.done == 7
    assert job.result["errors"] == 0
    branded = checks[("dataset-publication-accepted", "367")]
    assert branded["template_key"] == "custom/O367/dataset-publication-accepted.html"


def test_errors_and_mismatches_are_reported_and_fail_the_command(aws, settings, tmp_path):
    aws.load_samples()
    store = container.current().template_store
    store.write_template("custom/O9/added-to-team.html", "<p>{{ teamName }} {% if %}</p>")
    store.write_template("default/added-to-organization.html", "<p>{{ surprise }}</p>")
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 render error"):
        call_command("check_templates", stdout=out)
    text = out.getvalue()
    assert "ERROR  added-to-team [O9] custom/O9/added-to-team.html" in text
    assert "the template does not compile" in text
    assert "variables not in the manifest: surprise" in text

    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("check_templates", "--json", stdout=out)
    report = json.loads(out.getvalue())
    organization = checks_by_render(report)[("added-to-organization", None)]
    assert organization["errors"] == [] and organization["unknown_to_manifest"] == ["surprise"]
    assert "administrator" in organization["missing_from_template"]
    assert Job.objects.filter(origin__startswith="cli:").count() == 2


def test_the_daily_check_uses_the_draft_checks_engine(aws):
    """Gmail's size limit and javascript: links are errors here too, with file and line."""
    aws.load_samples()
    words = "lorem ipsum dolor sit amet " * 4600  # ~120 KB of text
    store = container.current().template_store
    store.write_template("default/added-to-team.html", f"<p>{words}</p>")
    store.write_template(
        "custom/O367/dataset-publication-accepted.html", '<p>hi</p>\n<a href="javascript:x()">x</a>'
    )
    job = job_run(
        job_id=job_create(kind=Job.Kind.TEMPLATE_CHECK, inputs={}, user=None, dispatch=False).pk,
        adapters=container.current(),
    )
    checks = checks_by_render(job.result)
    [size] = checks[("added-to-team", None)]["errors"]
    assert "Gmail clips messages at 102 KB" in size
    branded = checks[("dataset-publication-accepted", "367")]["findings"]
    [link] = [f for f in branded if f["code"] == "javascript-link"]
    assert (link["file"], link["organization"], link["line"]) == (
        "custom/O367/dataset-publication-accepted.html",
        "367",
        2,
    )


def test_strict_fails_on_warnings_alone(aws):
    aws.load_samples()
    container.current().template_store.write_template(
        "default/added-to-organization.html", "<p>{{ x }}</p>"
    )
    call_command("check_templates", stdout=io.StringIO())  # warnings only: passes
    with pytest.raises(CommandError, match="0 render error"):
        call_command("check_templates", "--strict", stdout=io.StringIO())


def test_template_owners_only(aws, make_user):
    from django.core.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):
        job_create(
            kind=Job.Kind.TEMPLATE_CHECK, inputs={}, user=make_user("Support leads"), dispatch=False
        )
