"""The read audit's model now lives in the ``audit`` app (``audit.0001``, state only: the table
and its rows stay). The console keeps a proxy under the same name: its content type, its view
permission (held by Support leads) and its admin page stay what they were."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("templates_admin", "0016_preference_resubscribe"),
        ("audit", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="JournalReadAudit")],
        ),
        migrations.CreateModel(
            name="JournalReadAudit",
            fields=[],
            options={
                "verbose_name": "Journal read",
                "verbose_name_plural": "Journal reads",
                "proxy": True,
                "default_permissions": ("view",),
                "indexes": [],
                "constraints": [],
            },
            bases=("audit.journalreadaudit",),
        ),
    ]
