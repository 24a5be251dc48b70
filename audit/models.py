"""The read audit's one model. Its table keeps the name it had in the console app (the rows
predate the move); the console shows it through a proxy that carries its view permission."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class JournalReadAudit(models.Model):
    """One read of the journal: who, through which door (console, email_log, API), what they asked
    for, and when. Every reader records here; the journal's home owns the trail."""

    class Channel(models.TextChoices):
        CONSOLE = "console", "Console"
        CLI = "cli", "email_log"
        API = "api", "API"

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    channel = models.CharField(max_length=10, choices=Channel.choices)
    # Who, as text, so the trail survives a deleted user or token: a username, "token NAME
    # (PREFIX…)", or the OS user that ran email_log.
    actor = models.CharField(max_length=200, db_index=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    # An API token's visible prefix (text, not a key: the audit does not depend on the API app).
    token_prefix = models.CharField(max_length=16, blank=True, db_index=True)
    action = models.CharField(max_length=40)  # "search", "detail", "email", "recipient", "id"...
    query = models.CharField(max_length=500, db_index=True)  # the search text or the row's Id
    filters = models.JSONField(default=dict, blank=True)
    # How many rows the read handed over, where that is not one (a CSV export), once known.
    rows = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        db_table = "templates_admin_journalreadaudit"
        ordering = ["-at", "-id"]
        verbose_name = "Journal read"
        verbose_name_plural = "Journal reads"
        # No permission here: who may read the trail is the console's (its proxy's view permission).
        default_permissions = ()

    def __str__(self) -> str:
        return f"{self.actor} {self.action} {self.query} at {self.at:%Y-%m-%d %H:%M}"
