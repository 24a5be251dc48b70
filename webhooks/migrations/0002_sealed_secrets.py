"""Issue 32: endpoint secrets sealed at rest. The columns grow to hold a Fernet token, and every
secret stored in clear (the current one and a rotation's previous one) is sealed under the first
of the configured keys (WEBHOOK_SECRET_KEYS, else the key derived from DJANGO_SECRET_KEY).
Reversible: going back opens them again.

An endpoint whose URL carries user information (``https://user:pass@host/``, refused from now
on) loses it, so the credentials leave the database, the pages and the logs, and is disabled with
the reason: its attempts would be refused anyway; re-add it without them."""

from django.db import migrations, models


def _keys() -> tuple[str, ...]:
    from emailops.config import Config

    return Config.from_settings().webhooks.secret_keys


def seal_stored(apps, schema_editor) -> None:
    from webhooks.secrets import seal, sealed

    endpoint_model = apps.get_model("webhooks", "WebhookEndpoint")
    keys = _keys()
    for endpoint in endpoint_model.objects.all():
        changes = {
            name: seal(value, keys=keys)
            for name in ("secret", "previous_secret")
            if (value := getattr(endpoint, name)) and not sealed(value)
        }
        if changes:
            endpoint_model.objects.filter(pk=endpoint.pk).update(**changes)


def open_stored(apps, schema_editor) -> None:
    from webhooks.secrets import sealed, unseal

    endpoint_model = apps.get_model("webhooks", "WebhookEndpoint")
    keys = _keys()
    for endpoint in endpoint_model.objects.all():
        changes = {
            name: unseal(value, keys=keys)
            for name in ("secret", "previous_secret")
            if (value := getattr(endpoint, name)) and sealed(value)
        }
        if changes:
            endpoint_model.objects.filter(pk=endpoint.pk).update(**changes)


USERINFO_REASON = "its URL carried user:password@, refused now: re-add it without"


def drop_user_information(apps, schema_editor) -> None:
    from urllib.parse import urlsplit

    from emailops.core.webhook_delivery import url_without_userinfo

    endpoint_model = apps.get_model("webhooks", "WebhookEndpoint")
    for endpoint in endpoint_model.objects.filter(url__contains="@"):
        if "@" in urlsplit(endpoint.url).netloc:
            endpoint_model.objects.filter(pk=endpoint.pk).update(
                url=url_without_userinfo(endpoint.url),
                enabled=False,
                disabled_reason=USERINFO_REASON,
            )


class Migration(migrations.Migration):
    dependencies = [("webhooks", "0001_initial")]

    operations = [
        migrations.AlterField(
            model_name="webhookendpoint", name="secret", field=models.CharField(max_length=500)
        ),
        migrations.AlterField(
            model_name="webhookendpoint",
            name="previous_secret",
            field=models.CharField(blank=True, max_length=500),
        ),
        migrations.RunPython(seal_stored, open_stored),
        migrations.RunPython(drop_user_information, migrations.RunPython.noop),
    ]
