"""Recipient erasure (a job, for Support leads: they get its permission here) and the row count
of a journal read (a CSV export)."""

from django.contrib.auth.management import create_permissions
from django.db import migrations, models

GROUP = "Support leads"
CODENAME = "erase_recipient"


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
        ("templates_admin", "0006_template_drafts"),
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
                ],
                "verbose_name": "Operation",
                "verbose_name_plural": "Operations",
            },
        ),
        migrations.AddField(
            model_name="journalreadaudit",
            name="rows",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="job",
            name="kind",
            field=models.CharField(
                choices=[
                    ("dlq_redrive", "Dead-letter redrive"),
                    ("bulk_resend", "Bulk resend"),
                    ("template_check", "Template check"),
                    ("erase_recipient", "Recipient erasure"),
                ],
                max_length=20,
            ),
        ),
        migrations.RunPython(grant, migrations.RunPython.noop),
    ]
