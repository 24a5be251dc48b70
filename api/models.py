"""Producer tokens for the send API, and the audit trail of who read the journal."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """One producer's bearer token. Only its SHA-256 is stored; ``prefix`` identifies it."""

    name = models.CharField(max_length=100, help_text="The producer, e.g. 'publishing-service'.")
    prefix = models.CharField(max_length=16, editable=False)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    requests_per_minute = models.PositiveIntegerField(
        default=60, help_text="This token's own limit on API requests; 0 means no limit."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class JournalReadAudit(models.Model):
    """One read of the journal: who, through which door, what they asked for, and when."""

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
    token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL)
    action = models.CharField(max_length=40)  # "search", "detail", "email", "recipient", "id"...
    query = models.CharField(max_length=500, db_index=True)  # the search text or the row's Id
    filters = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name = "Journal read"
        verbose_name_plural = "Journal reads"
        # Only the view permission: the trail is written by the code, never edited by people.
        default_permissions = ("view",)

    def __str__(self) -> str:
        return f"{self.actor} {self.action} {self.query} at {self.at:%Y-%m-%d %H:%M}"
