"""The console's job kinds, registered with the job engine (``jobs.engine``) as the app starts:
what runs each one (by dotted path, imported on its first run) and who may start it."""

from __future__ import annotations

from jobs import registry
from jobs.models import Job
from templates_admin import roles

_JOBS = "templates_admin.jobs"


def register() -> None:
    registry.register_kind(
        Job.Kind.DLQ_REDRIVE,
        runner=f"{_JOBS}.dlq.redrive_run",
        permission=roles.REDRIVE_DEAD_LETTERS,
    )
    registry.register_kind(
        Job.Kind.DLQ_LIST, runner=f"{_JOBS}.dlq.dead_letter_list_run", permission=roles.VIEW_JOBS
    )
    registry.register_kind(
        Job.Kind.BULK_RESEND,
        runner=f"{_JOBS}.bulk_resend.bulk_resend_run",
        permission=roles.BULK_RESEND,
    )
    registry.register_kind(
        Job.Kind.TEMPLATE_CHECK,
        runner=f"{_JOBS}.template_check.template_check_run",
        permission=roles.CHECK_TEMPLATES,
    )
    registry.register_kind(
        Job.Kind.ERASE_RECIPIENT,
        runner=f"{_JOBS}.erasure.erasure_run",
        permission=roles.ERASE_RECIPIENT,
        loggable=f"{_JOBS}.erasure.loggable_inputs",
    )
    registry.register_kind(
        Job.Kind.WEBHOOK_REPLAY,
        runner="templates_admin.webhooks.replay.webhook_replay_run",
        permission=roles.MANAGE_WEBHOOKS,
    )
