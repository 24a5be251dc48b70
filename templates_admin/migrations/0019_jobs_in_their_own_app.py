"""Jobs and their steps now live in the ``jobs`` app (state only: the tables and rows stay)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("templates_admin", "0018_webhooks_and_readings_in_their_own_apps"),
        ("jobs", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="JobStep"),
                migrations.DeleteModel(name="Job"),
            ],
        ),
    ]
