"""The journal-read audit now lives in the console app (``templates_admin.0005`` copied the rows
there and granted its view permission to Support leads); drop the API's copy, and its content type
and permission with it, so no group keeps a permission for a model that is gone."""

from django.db import migrations


def forget_old_model(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    # Deleting the content type deletes its permissions and every group's grant of them.
    ContentType.objects.filter(app_label="api", model="journalreadaudit").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("api", "0002_read_audit_for_support_leads"),
        ("templates_admin", "0005_journal_read_audit"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        # Reversing re-creates the table; api.0002's grant is re-run by migrating it again.
        migrations.RunPython(forget_old_model, migrations.RunPython.noop),
        migrations.DeleteModel(name="JournalReadAudit"),
    ]
