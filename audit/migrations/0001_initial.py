"""The read audit moves from the console app to its own: the model state only. The table keeps
its name (``templates_admin_journalreadaudit``) and its rows; the console keeps a proxy of it, with
the view permission and the admin page it always had (``templates_admin.0017``)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        # The last console migration that touched the model (0007 added ``rows``).
        ("templates_admin", "0016_preference_resubscribe"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="JournalReadAudit",
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
                        ("at", models.DateTimeField(auto_now_add=True, db_index=True)),
                        (
                            "channel",
                            models.CharField(
                                choices=[
                                    ("console", "Console"),
                                    ("cli", "email_log"),
                                    ("api", "API"),
                                ],
                                max_length=10,
                            ),
                        ),
                        ("actor", models.CharField(db_index=True, max_length=200)),
                        (
                            "token_prefix",
                            models.CharField(blank=True, db_index=True, max_length=16),
                        ),
                        ("action", models.CharField(max_length=40)),
                        ("query", models.CharField(db_index=True, max_length=500)),
                        ("filters", models.JSONField(blank=True, default=dict)),
                        ("rows", models.PositiveIntegerField(blank=True, null=True)),
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
                        "db_table": "templates_admin_journalreadaudit",
                        "ordering": ["-at", "-id"],
                        "default_permissions": (),
                    },
                ),
            ],
        ),
    ]
