from django.apps import AppConfig


class PreferencesAppConfig(AppConfig):
    name = "preferences"
    verbose_name = "Recipient preferences (public pages)"
