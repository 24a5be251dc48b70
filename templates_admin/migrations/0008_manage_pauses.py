"""Setting and lifting the reputation guard's pauses from the console's front page: a Support
lead's call (they get the permission here)."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

GROUP = "Support leads"
CODENAME = "manage_pauses"


def grant(apps, schema_editor):
    # Permissions are normally created after all migrations; make sure this one exists now.
    app_config = apps.get_app_config("templates_admin")
    app_config.models_module = True
    create_permissions(app_config, apps=apps, verbosity=0)
    app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name=GROUP)
    group.permissions.add(
        Permission.objects.get(content_type__app_label="templates_admin", codename=CODENAME)
    )


class Migration(migrations.Migration):
    dependencies = [
        ("templates_admin", "0007_erasure_and_export_audit"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="operationspage",
            options={
                "default_permissions": (),
                "managed": False,
                "permissions": [
                    ("view_jobs", "Can see operations, their progress and results, and the DLQ"),
                    ("redrive_dead_letters", "Can redrive dead-lettered requests"),
                    ("bulk_resend", "Can resend a batch of emails"),
                    ("check_templates", "Can run the template check"),
                    ("erase_recipient", "Can erase every journal row of an email address"),
                    ("manage_pauses", "Can pause or resume sending by priority, with a reason"),
                ],
                "verbose_name": "Operation",
                "verbose_name_plural": "Operations",
            },
        ),
        migrations.RunPython(grant, migrations.RunPython.noop),
    ]
