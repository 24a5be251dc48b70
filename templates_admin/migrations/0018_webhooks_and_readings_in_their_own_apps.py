"""Webhook endpoints, deliveries and attempts now live in the ``webhooks`` app, and the periodic
checks' readings (OpsReading) in ``monitoring`` (state only: the tables and rows stay)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("templates_admin", "0017_read_audit_in_its_own_app"),
        ("monitoring", "0001_initial"),
        ("webhooks", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="WebhookAttempt"),
                migrations.DeleteModel(name="WebhookDelivery"),
                migrations.DeleteModel(name="WebhookEndpoint"),
                migrations.DeleteModel(name="OpsReading"),
            ],
        ),
    ]
