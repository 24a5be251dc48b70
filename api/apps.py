from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "api"
    verbose_name = "Send API and journal audit"
    default_auto_field = "django.db.models.BigAutoField"
