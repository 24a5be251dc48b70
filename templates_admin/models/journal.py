"""The journal area's models: its admin entry, the emails the console queued, and the read
audit's trail as the console shows it (the trail itself is the ``audit`` app's)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

import audit.models
from templates_admin.models.pages import ConsolePage


class EmailJournalPage(ConsolePage):
    """Placeholder (no table): the admin entry and permissions for the journal."""

    class Meta(ConsolePage.Meta):
        verbose_name = "Email journal"
        verbose_name_plural = "Email journal"
        permissions = [
            ("search_journal", "Can search and read the email journal"),
            ("resend_email", "Can resend an email to its recipient"),
        ]


class EmailAction(models.Model):
    """Audit trail of emails the console put on the queue: test sends and resends."""

    class Kind(models.TextChoices):
        SEND_TEST = "send_test", "Test send"
        RESEND = "resend", "Resend"
        # A log-only row (rate safeguard, loop) sent after all, with its own journal key.
        RELEASE = "release", "Release from log-only"

    kind = models.CharField(max_length=10, choices=Kind.choices)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    at = models.DateTimeField(auto_now_add=True, db_index=True)
    message_id = models.CharField(max_length=200)
    recipient = models.CharField(max_length=320)
    reason = models.TextField(blank=True)
    # The fresh dedupeId of the new request; unique, so a double submit cannot audit twice.
    dedupe_id = models.CharField(max_length=200, unique=True)
    journal_key = models.CharField(max_length=300, db_index=True)  # Id of the new journal row
    original_key = models.CharField(
        max_length=300, blank=True, db_index=True
    )  # resend: the old row
    sqs_message_id = models.CharField(max_length=100, blank=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} {self.message_id} to {self.recipient} by {self.user}"


class JournalReadAudit(audit.models.JournalReadAudit):
    """The read audit's trail as the console shows it (its admin page, under the app label and URL
    it always had) and the permission to read it: Support leads hold its view permission."""

    class Meta:
        proxy = True
        verbose_name = "Journal read"
        verbose_name_plural = "Journal reads"
        # Only the view permission: the trail is written by the code, never edited by people.
        default_permissions = ("view",)
