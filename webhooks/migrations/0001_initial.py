"""Webhook endpoints, deliveries and attempts move from the console app to this one: the model
state only, the tables (``templates_admin_webhook*``) and their rows stay; their content types
follow them. The console keeps ``WebhooksPage`` (its admin entry and ``manage_webhooks``)."""

import django.db.models.deletion
from django.db import migrations, models

MODELS = ("webhookendpoint", "webhookdelivery", "webhookattempt")


def move_content_types(apps, schema_editor, source="templates_admin", target="webhooks"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not ContentType.objects.filter(app_label=target, model=model).exists():
            ContentType.objects.filter(app_label=source, model=model).update(app_label=target)


def move_content_types_back(apps, schema_editor):
    move_content_types(apps, schema_editor, source="webhooks", target="templates_admin")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        # 0013 made the models; later console migrations did not touch them.
        ("templates_admin", "0017_read_audit_in_its_own_app"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="WebhookDelivery",
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
                        ("event_id", models.CharField(max_length=50)),
                        ("event_type", models.CharField(max_length=40)),
                        ("journal_key", models.CharField(db_index=True, max_length=500)),
                        ("event", models.JSONField()),
                        ("body", models.TextField()),
                        (
                            "state",
                            models.CharField(
                                choices=[
                                    ("pending", "Pending"),
                                    ("sending", "Sending"),
                                    ("delivered", "Delivered"),
                                    ("failed", "Failed"),
                                ],
                                default="pending",
                                max_length=10,
                            ),
                        ),
                        ("attempts", models.IntegerField(default=0)),
                        ("next_attempt_at", models.DateTimeField(blank=True, null=True)),
                        ("last_status", models.IntegerField(blank=True, null=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                        ("delivered_at", models.DateTimeField(blank=True, null=True)),
                    ],
                    options={
                        "db_table": "templates_admin_webhookdelivery",
                        "ordering": ["-created_at", "-id"],
                    },
                ),
                migrations.CreateModel(
                    name="WebhookEndpoint",
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
                        ("url", models.URLField(max_length=2000)),
                        ("description", models.CharField(blank=True, max_length=200)),
                        ("secret", models.CharField(max_length=100)),
                        ("previous_secret", models.CharField(blank=True, max_length=100)),
                        ("previous_secret_until", models.DateTimeField(blank=True, null=True)),
                        ("event_types", models.JSONField(blank=True, default=list)),
                        ("message_ids", models.JSONField(blank=True, default=list)),
                        ("organization", models.CharField(blank=True, max_length=50)),
                        ("producer", models.CharField(blank=True, max_length=200, null=True)),
                        ("include_context_keys", models.BooleanField(default=False)),
                        ("enabled", models.BooleanField(default=True)),
                        ("disabled_reason", models.CharField(blank=True, max_length=200)),
                        ("consecutive_failures", models.IntegerField(default=0)),
                        ("failing", models.BooleanField(default=False)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        "db_table": "templates_admin_webhookendpoint",
                        "ordering": ["id"],
                    },
                ),
                migrations.CreateModel(
                    name="WebhookAttempt",
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
                        ("at", models.DateTimeField()),
                        ("status_code", models.IntegerField(blank=True, null=True)),
                        ("latency_ms", models.IntegerField(default=0)),
                        ("error", models.CharField(blank=True, max_length=500)),
                        (
                            "delivery",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="log",
                                to="webhooks.webhookdelivery",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "templates_admin_webhookattempt",
                        "ordering": ["at", "id"],
                    },
                ),
                migrations.AddField(
                    model_name="webhookdelivery",
                    name="endpoint",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="deliveries",
                        to="webhooks.webhookendpoint",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="webhookdelivery",
                    constraint=models.UniqueConstraint(
                        fields=("endpoint", "event_id"), name="one_delivery_per_event"
                    ),
                ),
            ],
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
    ]
