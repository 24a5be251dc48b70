from django.apps import AppConfig


class TemplatesAdminConfig(AppConfig):
    name = "templates_admin"
    verbose_name = "Email"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from audit import retention
        from templates_admin import login_throttle  # noqa: F401  (connects the lockout log)
        from templates_admin.models import EmailAction, Job, MappingChange, SuppressionRemoval

        # The console's audit trails, pruned with the others (audit.retention).
        retention.trail("mapping_changes", MappingChange, "at")
        retention.trail("email_actions", EmailAction, "at")
        retention.trail("suppression_removals", SuppressionRemoval, "at")
        retention.trail(
            "jobs", Job, "created_at", state__in=(Job.State.SUCCEEDED, Job.State.FAILED)
        )
