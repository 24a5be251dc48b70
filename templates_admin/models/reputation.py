"""The reputation area's model: the audit trail of the guard's pauses."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ReputationPauseChange(models.Model):
    """Audit trail of the guard's pauses set or lifted by a person (CLI or console), with why."""

    class Action(models.TextChoices):
        PAUSE = "pause"
        RESUME = "resume"

    action = models.CharField(max_length=10, choices=Action.choices)
    priority = models.CharField(max_length=10)
    organization = models.CharField(max_length=40, blank=True)  # "" = account-wide
    reason = models.TextField()
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    actor = models.CharField(max_length=150, blank=True)  # the CLI's operator when no user
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-at", "-id"]
        default_permissions = ("view",)
        permissions = [("manage_reputation", "Can set and lift the reputation guard's pauses")]

    def __str__(self) -> str:
        where = f"organization {self.organization}" if self.organization else "account"
        return f"{self.action} {self.priority} ({where}) by {self.user or self.actor}"
