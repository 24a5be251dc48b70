"""The journal-read audit moves from the API app to the journal's home, the console app.

Rows are copied with their ids (the trail must survive the move), the token becomes its visible
prefix (text, so the console does not depend on the API app), and Support leads get the new view
permission. ``api.0003`` then drops the old table.
"""

import django.db.models.deletion
from django.conf import settings
from django.contrib.auth.management import create_permissions
from django.core.management.color import no_style
from django.db import migrations, models

GROUP = "Support leads"
CODENAME = "view_journalreadaudit"
COPIED = ("id", "at", "channel", "actor", "user_id", "action", "query", "filters")


def copy_rows(apps, schema_editor):
    Old = apps.get_model("api", "JournalReadAudit")
    New = apps.get_model("templates_admin", "JournalReadAudit")
    rows = Old.objects.using(schema_editor.connection.alias).select_related("token")
    New.objects.bulk_create(
        New(
            token_prefix=row.token.prefix if row.token_id else "",
            **{field: getattr(row, field) for field in COPIED},
        )
        for row in rows.iterator()
    )
    # Explicit ids leave PostgreSQL's sequence behind: the next audit row would collide.
    with schema_editor.connection.cursor() as cursor:
        for sql in schema_editor.connection.ops.sequence_reset_sql(no_style(), [New]):
            cursor.execute(sql)


def copy_rows_back(apps, schema_editor):
    Old = apps.get_model("api", "JournalReadAudit")
    New = apps.get_model("templates_admin", "JournalReadAudit")
    Token = apps.get_model("api", "ApiToken")
    tokens = dict(Token.objects.values_list("prefix", "id"))
    Old.objects.bulk_create(
        Old(token_id=tokens.get(row.token_prefix), **{f: getattr(row, f) for f in COPIED})
        for row in New.objects.iterator()
    )


def grant(apps, schema_editor):
    # Permissions are normally created after all migrations; make sure they exist now.
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
        ("templates_admin", "0004_jobs"),
        ("api", "0002_read_audit_for_support_leads"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="JournalReadAudit",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("at", models.DateTimeField(auto_now_add=True, db_index=True)),
                (
                    "channel",
                    models.CharField(
                        choices=[("console", "Console"), ("cli", "email_log"), ("api", "API")],
                        max_length=10,
                    ),
                ),
                ("actor", models.CharField(db_index=True, max_length=200)),
                ("token_prefix", models.CharField(blank=True, db_index=True, max_length=16)),
                ("action", models.CharField(max_length=40)),
                ("query", models.CharField(db_index=True, max_length=500)),
                ("filters", models.JSONField(blank=True, default=dict)),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name": "Journal read",
                "verbose_name_plural": "Journal reads",
                "ordering": ["-at", "-id"],
                "default_permissions": ("view",),
            },
        ),
        migrations.RunPython(copy_rows, copy_rows_back),
        migrations.RunPython(grant, migrations.RunPython.noop),
    ]
