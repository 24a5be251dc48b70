from django.apps import AppConfig


class TemplatesAdminConfig(AppConfig):
    name = "templates_admin"
    verbose_name = "Email"
    default_auto_field = "django.db.models.BigAutoField"
