"""The suppression area's models: its admin entry and the audit trail of removals."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from templates_admin.models.pages import ConsolePage


class SuppressionListPage(ConsolePage):
    """Placeholder (no table): the admin entry and permissions for the suppression list."""

    class Meta(ConsolePage.Meta):
        verbose_name = "Suppression list"
        verbose_name_plural = "Suppression list"
        permissions = [
            ("view_suppressions", "Can see the suppression list"),
            ("remove_suppression", "Can remove an address from the suppression list"),
        ]


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


class PreferenceResubscribe(models.Model):
    """Audit trail of Support re-subscribing an address to a category it had unsubscribed from
    (docs/preferences.md): who, when, why, and the preference as it was. Only at the
    recipient's request, so ``recipient_asked`` is always true; it is kept to say so."""

    address = models.CharField(max_length=320, db_index=True)  # the address_key
    category = models.CharField(max_length=64)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    at = models.DateTimeField(auto_now_add=True, db_index=True)
    reason = models.TextField()
    unsubscribed_how = models.CharField(max_length=20, blank=True)  # one-click, page, support
    unsubscribed_at = models.DateTimeField(null=True)
    recipient_asked = models.BooleanField(default=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.address} re-subscribed to {self.category} by {self.user} at {self.at:%Y-%m-%d %H:%M}"
