from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Audit"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from audit import retention
        from audit.models import JournalReadAudit

        retention.trail("journal_reads", JournalReadAudit, "at")
