"""Finished erasure jobs no longer hold the address they erased: their inputs and results keep a
masked form (``d***@example.com``) instead. Unfinished ones keep it until they succeed (their
worker needs it), then drop it too (``templates_admin.jobs.erasure``)."""

from django.db import migrations


def _masked(address: str) -> str:
    # emailops.core.erasure.masked_address as of this migration (migrations do not import code
    # that may change later)
    local, at, domain = address.strip().lower().rpartition("@")
    return f"{local.strip(chr(34))[:1]}***{at}{domain}" if at else "***"


def forwards(apps, schema_editor):
    Job = apps.get_model("templates_admin", "Job")
    for job in Job.objects.filter(kind="erase_recipient", state="SUCCEEDED"):
        inputs, result = dict(job.inputs or {}), dict(job.result or {})
        address = inputs.pop("address", "") or result.get("address", "")
        if not address:
            continue
        inputs.setdefault("addressMasked", _masked(address))
        if "address" in result:
            result["address_masked"] = _masked(result.pop("address"))
        job.inputs, job.result = inputs, result or None
        job.save(update_fields=["inputs", "result"])


class Migration(migrations.Migration):
    dependencies = [("templates_admin", "0010_publish_steps")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
