"""Jobs and their steps move from the console app to the job engine's: the model state only, the
tables (``templates_admin_job``, ``templates_admin_jobstep``) and their rows stay; their content
types follow them. The console keeps ``OperationsPage`` (its admin entry and permissions)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

MODELS = ("job", "jobstep")


def move_content_types(apps, schema_editor, source="templates_admin", target="jobs"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not ContentType.objects.filter(app_label=target, model=model).exists():
            ContentType.objects.filter(app_label=source, model=model).update(app_label=target)


def move_content_types_back(apps, schema_editor):
    move_content_types(apps, schema_editor, source="jobs", target="templates_admin")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        # 0014 last changed the models (the webhook replay kind); 0018 is the console's latest.
        ("templates_admin", "0018_webhooks_and_readings_in_their_own_apps"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Job",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        (
                            "kind",
                            models.CharField(
                                choices=[
                                    ("dlq_redrive", "Dead-letter redrive"),
                                    ("dlq_list", "Dead-letter listing"),
                                    ("bulk_resend", "Bulk resend"),
                                    ("template_check", "Template check"),
                                    ("erase_recipient", "Recipient erasure"),
                                    ("webhook_replay", "Webhook replay"),
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
                        "db_table": "templates_admin_job",
                        "ordering": ["-created_at", "-id"],
                    },
                ),
                migrations.CreateModel(
                    name="JobStep",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
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
                                to="jobs.job",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "templates_admin_jobstep",
                        "ordering": ["id"],
                        "constraints": [
                            models.UniqueConstraint(fields=("job", "key"), name="job_step_once")
                        ],
                    },
                ),
            ],
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
    ]
