from django.apps import AppConfig


class WorkerConfig(AppConfig):
    name = "worker"
    verbose_name = "Email consumer"

    def ready(self) -> None:
        from django.conf import settings

        if settings.CONSUMER_PROCESS:  # sends no task: Celery stays unimported
            return
        # Make the project's Celery app the current one, so shared tasks bind to it.
        import emailops.celery  # noqa: F401
