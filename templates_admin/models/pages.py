"""The placeholder models (no tables): the admin index's entries for the console's areas, and
the carriers of their permissions."""

from __future__ import annotations

from django.db import models


class ConsolePage(models.Model):
    """Placeholder (no table): one area's admin entry and permissions. Its name is the entry's."""

    class Meta:
        abstract = True
        managed = False
        default_permissions = ()

    def __str__(self) -> str:
        return str(self._meta.verbose_name_plural)
