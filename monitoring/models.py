"""The readings of the periodic checks. The table keeps the name it had in the console app."""

from __future__ import annotations

from django.db import models


class OpsReading(models.Model):
    """The last reading of a periodic check (dead-letter depth, stuck claims), shared by the beat
    worker that takes it and the console that shows it (the cache is per process)."""

    name = models.CharField(max_length=50, primary_key=True)
    value = models.JSONField(default=dict)
    at = models.DateTimeField()

    class Meta:
        db_table = "templates_admin_opsreading"

    def __str__(self) -> str:
        return f"{self.name} at {self.at:%Y-%m-%d %H:%M}"
