"""python manage.py check_templates — render every mapping with its default template and each
branded copy, with the manifest's sample values; exit 1 on render errors (``--strict``: on
variable mismatches too). The run is recorded as a job, like the console's."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from emailops import container
from jobs.models import Job
from templates_admin.management.jobs import cli_job_create, cli_job_run


class Command(BaseCommand):
    help = "Render every template (default and branded) with sample values; non-zero on errors."

    def add_arguments(self, parser):
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="the full report as JSON"
        )
        parser.add_argument(
            "--strict", action="store_true", help="variable mismatches fail the check too"
        )

    def handle(self, *args, as_json: bool = False, strict: bool = False, **options):
        job = cli_job_run(
            cli_job_create(kind=Job.Kind.TEMPLATE_CHECK, inputs={}),
            adapters=container.current(),
            failure="template check job #{job.pk} failed: {job.error}",
        )
        report = job.result or {}
        if as_json:
            self.stdout.write(json.dumps(report, indent=2, ensure_ascii=False))
        else:
            for check in report["checks"]:
                where = f"O{check['organization']}" if check["organization"] else "default"
                marks = check["errors"] + check["warnings"]
                state = "ERROR" if check["errors"] else ("warn" if marks else "ok")
                self.stdout.write(
                    f"{state:5}  {check['message_id']} [{where}] {check['template_key']}"
                )
                for text in marks:
                    self.stdout.write(f"       {text}")
            self.stdout.write(
                f"job #{job.pk}: {report['renders']} render(s), {report['errors']} error(s), "
                f"{report['warnings']} warning(s)"
            )
        if report["errors"] or (strict and report["warnings"]):
            raise CommandError(
                f"{report['errors']} render error(s), {report['warnings']} warning(s)"
            )
