from django.apps import AppConfig


class WorkerConfig(AppConfig):
    name = "worker"
    verbose_name = "Email consumer"

    def ready(self) -> None:
        from django.core import checks

        from emailops.config import check_settings

        # Every process installs this app: manage.py check and each command check the sections.
        checks.register(check_settings)
