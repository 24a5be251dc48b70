"""Jobs (redrive, bulk resend, template check), their steps, periodic readings, and who may run
them: the new permissions go to the console's groups (see templates_admin.roles)."""

import django.db.models.deletion
from django.conf import settings
from django.contrib.auth.management import create_permissions
from django.db import migrations, models

# Viewing: Support and up. Redrive and bulk resend: Support leads and up. Template check: Template
# owners (it renders every template; they own them).
NEW_PERMISSIONS = {
    "Support": ["view_jobs"],
    "Support leads": ["view_jobs", "redrive_dead_letters", "bulk_resend"],
    "Template owners": ["view_jobs", "redrive_dead_letters", "bulk_resend", "check_templates"],
}


def grant(apps, schema_editor):
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in NEW_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.add(
            *Permission.objects.filter(
                content_type__app_label="templates_admin", codename__in=codenames
            )
        )


def revoke(apps, schema_editor):
    codenames = {c for names in NEW_PERMISSIONS.values() for c in names}
    apps.get_model("auth", "Permission").objects.filter(
        content_type__app_label="templates_admin", codename__in=codenames
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("templates_admin", "0003_suppression_removal"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="OperationsPage",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
            ],
            options={
                "verbose_name": "Operation",
                "verbose_name_plural": "Operations",
                "permissions": [
                    ("view_jobs", "Can see operations, their progress and results, and the DLQ"),
                    ("redrive_dead_letters", "Can redrive dead-lettered requests"),
                    ("bulk_resend", "Can resend a batch of emails"),
                    ("check_templates", "Can run the template check"),
                ],
                "managed": False,
                "default_permissions": (),
            },
        ),
        migrations.CreateModel(
            name="OpsReading",
            fields=[
                ("name", models.CharField(max_length=50, primary_key=True, serialize=False)),
                ("value", models.JSONField(default=dict)),
                ("at", models.DateTimeField()),
            ],
        ),
        migrations.CreateModel(
            name="Job",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("dlq_redrive", "Dead-letter redrive"),
                            ("bulk_resend", "Bulk resend"),
                            ("template_check", "Template check"),
                        ],
                        max_length=20,
                    ),
                ),
                (
                    "state",
                    models.CharField(
                        choices=[
                            ("PENDING", "Pending"),
                            ("RUNNING", "Running"),
                            ("SUCCEEDED", "Succeeded"),
                            ("FAILED", "Failed"),
                        ],
                        default="PENDING",
                        max_length=10,
                    ),
                ),
                ("inputs", models.JSONField(default=dict)),
                ("done", models.PositiveIntegerField(default=0)),
                ("total", models.PositiveIntegerField(blank=True, null=True)),
                ("result", models.JSONField(blank=True, null=True)),
                ("error", models.TextField(blank=True)),
                ("origin", models.CharField(blank=True, max_length=100)),
                ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                ("heartbeat_at", models.DateTimeField(blank=True, null=True)),
                ("runs", models.PositiveIntegerField(default=0)),
                (
                    "created_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at", "-id"],
            },
        ),
        migrations.CreateModel(
            name="JobStep",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("key", models.CharField(max_length=300)),
                (
                    "outcome",
                    models.CharField(
                        choices=[
                            ("pending", "Pending"),
                            ("done", "Done"),
                            ("skipped", "Skipped"),
                            ("failed", "Failed"),
                        ],
                        default="pending",
                        max_length=10,
                    ),
                ),
                ("detail", models.JSONField(default=dict)),
                ("at", models.DateTimeField(auto_now=True)),
                (
                    "job",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="steps",
                        to="templates_admin.job",
                    ),
                ),
            ],
            options={
                "ordering": ["id"],
                "constraints": [
                    models.UniqueConstraint(fields=("job", "key"), name="job_step_once")
                ],
            },
        ),
        migrations.RunPython(grant, revoke),
    ]
