"""The suppression list's console page (placeholder + permissions, granted to the groups as in
templates_admin.roles) and the audit trail of removals."""

import django.db.models.deletion
from django.conf import settings
from django.contrib.auth.management import create_permissions
from django.db import migrations, models

GRANTS = {
    "Support": ["view_suppressions"],
    "Support leads": ["view_suppressions", "remove_suppression"],
    "Template owners": ["view_suppressions", "remove_suppression"],
}


def grant(apps, schema_editor):
    # Permissions are normally created after all migrations; make sure they exist now.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in GRANTS.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.add(
            *Permission.objects.filter(
                content_type__app_label="templates_admin", codename__in=codenames
            )
        )


def revoke(apps, schema_editor):
    Permission = apps.get_model("auth", "Permission")
    Permission.objects.filter(
        content_type__app_label="templates_admin",
        codename__in=["view_suppressions", "remove_suppression"],
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("templates_admin", "0002_console_groups"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="SuppressionListPage",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
            ],
            options={
                "verbose_name": "Suppression list",
                "verbose_name_plural": "Suppression list",
                "permissions": [
                    ("view_suppressions", "Can see the suppression list"),
                    ("remove_suppression", "Can remove an address from the suppression list"),
                ],
                "managed": False,
                "default_permissions": (),
            },
        ),
        migrations.CreateModel(
            name="SuppressionRemoval",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("address", models.CharField(db_index=True, max_length=320)),
                ("at", models.DateTimeField(auto_now_add=True, db_index=True)),
                ("reason", models.TextField()),
                ("suppression_reason", models.CharField(max_length=20)),
                ("suppression_detail", models.TextField(blank=True)),
                ("suppression_source", models.CharField(blank=True, max_length=200)),
                ("suppressed_at", models.DateTimeField(null=True)),
                ("recipient_asked", models.BooleanField(default=False)),
                (
                    "user",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-at", "-id"],
            },
        ),
        migrations.RunPython(grant, revoke),
    ]
