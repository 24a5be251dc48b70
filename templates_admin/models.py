"""Console data. Mappings and the journal live in DynamoDB; the Django DB holds only users, groups
and the audit trail. The unmanaged placeholder models give the admin index its entries
("Template mappings", "Email journal", "Suppression list") and carry the console's permissions."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class TemplateMappingPage(models.Model):
    """Placeholder (no table): the admin entry and permissions for mappings and preview."""

    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "Template mapping"
        verbose_name_plural = "Template mappings"
        permissions = [
            ("manage_mappings", "Can view and edit template mappings"),
            ("preview_templates", "Can preview templates with sample data"),
            ("send_test_email", "Can send a test email to themselves"),
        ]

    def __str__(self) -> str:
        return "Template mappings"


class EmailJournalPage(models.Model):
    """Placeholder (no table): the admin entry and permissions for the journal."""

    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "Email journal"
        verbose_name_plural = "Email journal"
        permissions = [
            ("search_journal", "Can search and read the email journal"),
            ("resend_email", "Can resend an email to its recipient"),
        ]

    def __str__(self) -> str:
        return "Email journal"


class SuppressionListPage(models.Model):
    """Placeholder (no table): the admin entry and permissions for the suppression list."""

    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "Suppression list"
        verbose_name_plural = "Suppression list"
        permissions = [
            ("view_suppressions", "Can see the suppression list"),
            ("remove_suppression", "Can remove an address from the suppression list"),
        ]

    def __str__(self) -> str:
        return "Suppression list"


class MappingChange(models.Model):
    """Audit trail of template mapping edits: who, when, before → after."""

    class Action(models.TextChoices):
        CREATE = "create"
        UPDATE = "update"
        DELETE = "delete"

    message_id = models.CharField(max_length=200, db_index=True)
    action = models.CharField(max_length=10, choices=Action.choices)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    at = models.DateTimeField(auto_now_add=True, db_index=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} {self.message_id} by {self.user} at {self.at:%Y-%m-%d %H:%M}"


class EmailAction(models.Model):
    """Audit trail of emails the console put on the queue: test sends and resends."""

    class Kind(models.TextChoices):
        SEND_TEST = "send_test", "Test send"
        RESEND = "resend", "Resend"

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


class SuppressionRemoval(models.Model):
    """Audit trail of addresses taken off the suppression list: who, when, why, and the entry as
    it was (the store forgets it once removed)."""

    address = models.CharField(max_length=320, db_index=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    at = models.DateTimeField(auto_now_add=True, db_index=True)
    reason = models.TextField()  # why it was removed, as the person wrote it
    suppression_reason = models.CharField(max_length=20)  # BOUNCE, COMPLAINT or MANUAL
    suppression_detail = models.TextField(blank=True)
    suppression_source = models.CharField(max_length=200, blank=True)
    suppressed_at = models.DateTimeField(null=True)
    # A complaint's removal needs the person's word that the recipient asked for email again.
    recipient_asked = models.BooleanField(default=False)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.address} removed by {self.user} at {self.at:%Y-%m-%d %H:%M}"
