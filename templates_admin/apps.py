from django.apps import AppConfig


class TemplatesAdminConfig(AppConfig):
    name = "templates_admin"
    verbose_name = "Email"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from audit import retention
        from monitoring import periodic
        from templates_admin import login_throttle  # noqa: F401  (connects the lockout log)
        from templates_admin.jobs import kinds
        from templates_admin.models import EmailAction, MappingChange, SuppressionRemoval

        # The console's audit trails, pruned with the others (audit.retention).
        retention.trail("mapping_changes", MappingChange, "at")
        retention.trail("email_actions", EmailAction, "at")
        retention.trail("suppression_removals", SuppressionRemoval, "at")
        # The jobs the console offers, and the periodic work beat runs for it (by name).
        kinds.register()
        periodic.register(
            "template_check_daily", "templates_admin.jobs.template_check.template_check_daily"
        )
        periodic.register("reputation", "templates_admin.reputation.guard.reputation_evaluate")
