"""Support leads may read the journal-read audit trail (Support may not)."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

GROUP = "Support leads"
CODENAME = "view_journalreadaudit"


def grant(apps, schema_editor):
    # Permissions are normally created after all migrations; make sure they exist now.
    app_config = apps.get_app_config("api")
    app_config.models_module = True
    create_permissions(app_config, apps=apps, verbosity=0)
    app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name=GROUP)
    group.permissions.add(Permission.objects.get(content_type__app_label="api", codename=CODENAME))


def revoke(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for group in Group.objects.filter(name=GROUP):
        group.permissions.remove(
            *Permission.objects.filter(content_type__app_label="api", codename=CODENAME)
        )


class Migration(migrations.Migration):
    dependencies = [
        ("api", "0001_initial"),
        ("templates_admin", "0002_console_groups"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(grant, revoke)]
