"""The mappings area's models: its admin entry and the audit trail of mapping edits."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from templates_admin.models.pages import ConsolePage


class TemplateMappingPage(ConsolePage):
    """Placeholder (no table): the admin entry and permissions for mappings and preview."""

    class Meta(ConsolePage.Meta):
        verbose_name = "Template mapping"
        verbose_name_plural = "Template mappings"
        permissions = [
            ("manage_mappings", "Can view and edit template mappings"),
            ("preview_templates", "Can preview templates with sample data"),
            ("send_test_email", "Can send a test email to themselves"),
        ]


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


class CategoryDefinition(models.Model):
    """A category a mapping may put its mail in (``TemplateMapping.category``, the ``Category``
    of the mapping item): what a recipient may unsubscribe from (docs/preferences.md). The slug
    is what the mappings and the preferences table store, so it never changes once made; the
    label and description are the words the console and the preference page show."""

    slug = models.SlugField(
        max_length=64,
        unique=True,
        help_text="Letters, digits and hyphens, e.g. dataset-activity. Stored on mappings and on "
        "recipients' preferences: it cannot be changed later.",
    )
    label = models.CharField(
        max_length=120,
        help_text="What recipients read, e.g. “Activity on datasets you follow”.",
    )
    description = models.TextField(
        blank=True, help_text="Which emails it holds, for template owners and recipients."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]
        verbose_name = "Email category"
        verbose_name_plural = "Email categories"

    def __str__(self) -> str:
        return f"{self.label} ({self.slug})"
