"""OpsReading moves from the console app to this one: the model state only, the table
(``templates_admin_opsreading``) and its rows stay; its content type follows it."""

from django.db import migrations, models

MODELS = ("opsreading",)


def move_content_types(apps, schema_editor, source="templates_admin", target="monitoring"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not ContentType.objects.filter(app_label=target, model=model).exists():
            ContentType.objects.filter(app_label=source, model=model).update(app_label=target)


def move_content_types_back(apps, schema_editor):
    move_content_types(apps, schema_editor, source="monitoring", target="templates_admin")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("templates_admin", "0017_read_audit_in_its_own_app"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="OpsReading",
                    fields=[
                        (
                            "name",
                            models.CharField(max_length=50, primary_key=True, serialize=False),
                        ),
                        ("value", models.JSONField(default=dict)),
                        ("at", models.DateTimeField()),
                    ],
                    options={"db_table": "templates_admin_opsreading"},
                ),
            ],
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
    ]
