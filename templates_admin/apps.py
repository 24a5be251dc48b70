from django.apps import AppConfig

# The console's job kinds' home: their runners are named by dotted path below.
_JOBS = "templates_admin.jobs"


class TemplatesAdminConfig(AppConfig):
    name = "templates_admin"
    verbose_name = "Email"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from audit import retention
        from monitoring import periodic
        from templates_admin import login_throttle  # noqa: F401  (connects the lockout log)
        from templates_admin.models import EmailAction, MappingChange, SuppressionRemoval

        # The console's audit trails, pruned with the others (audit.retention).
        retention.trail("mapping_changes", MappingChange, "at")
        retention.trail("email_actions", EmailAction, "at")
        retention.trail("suppression_removals", SuppressionRemoval, "at")
        _register_job_kinds()
        # The periodic work beat runs for the console, by name (worker.tasks imports no console).
        periodic.register(
            "template_check_daily", "templates_admin.jobs.template_check.template_check_daily"
        )
        periodic.register("reputation", "templates_admin.reputation.guard.reputation_evaluate")


def _register_job_kinds() -> None:
    """The jobs the console offers, registered with the job engine: what runs each (by dotted
    path, imported on its first run: no process pays for the console's modules at start-up) and
    who may start it."""
    from jobs import registry
    from jobs.models import Job
    from templates_admin import roles

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
