from django.apps import AppConfig


class TemplatesAdminConfig(AppConfig):
    name = "templates_admin"
    verbose_name = "Email"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from templates_admin import login_throttle  # noqa: F401  (connects the lockout log)
