"""Producer tokens for the send API. (Their reads of the journal are audited in the console's
``templates_admin.JournalReadAudit``, with every other reader's.)"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from emailops.core.dedupe import api_namespace


class ApiToken(models.Model):
    """One producer's bearer token. Only its SHA-256 is stored; ``prefix`` identifies it.

    Its id is also its tenancy: the rows it writes are keyed and owned ``api:<id>`` (``namespace``),
    so tokens are revoked, never deleted (a reused id would inherit another producer's rows).
    """

    name = models.CharField(max_length=100, help_text="The producer, e.g. 'publishing-service'.")
    prefix = models.CharField(max_length=16, editable=False)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    emails_per_minute = models.PositiveIntegerField(
        default=60,
        help_text="Emails (recipients) this token may send per minute; each read counts as one. "
        "0 means no limit.",
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

    @property
    def namespace(self) -> str:
        return api_namespace(self.pk)
