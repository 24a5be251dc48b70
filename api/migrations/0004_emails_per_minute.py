"""The per-token limit counts emails (recipients), not requests: the field says so. Existing
limits carry over as they are (a request used to be at least one email)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("api", "0003_read_audit_moved_to_console")]

    operations = [
        migrations.RenameField(
            model_name="apitoken", old_name="requests_per_minute", new_name="emails_per_minute"
        ),
        migrations.AlterField(
            model_name="apitoken",
            name="emails_per_minute",
            field=models.PositiveIntegerField(
                default=60,
                help_text="Emails (recipients) this token may send per minute; each read counts "
                "as one. 0 means no limit.",
            ),
        ),
    ]
