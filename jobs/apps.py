from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = "Jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from audit import retention
        from jobs.models import Job

        # A finished job is an audit record (who started what); one still running never goes.
        retention.trail(
            "jobs", Job, "created_at", state__in=(Job.State.SUCCEEDED, Job.State.FAILED)
        )
