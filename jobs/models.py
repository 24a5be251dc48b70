"""Jobs and their steps. The tables keep the names they had in the console app."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Job(models.Model):
    """One long operation (redrive, bulk resend, template check): its inputs, state, progress and
    result. It is also the audit record: who started what, when, and what came of it."""

    # The kinds the apps register with the engine (templates_admin.apps), named here
    # because the column's choices are the schema's.
    class Kind(models.TextChoices):
        DLQ_REDRIVE = "dlq_redrive", "Dead-letter redrive"
        DLQ_LIST = "dlq_list", "Dead-letter listing"
        BULK_RESEND = "bulk_resend", "Bulk resend"
        TEMPLATE_CHECK = "template_check", "Template check"
        ERASE_RECIPIENT = "erase_recipient", "Recipient erasure"
        WEBHOOK_REPLAY = "webhook_replay", "Webhook replay"

    class State(models.TextChoices):
        PENDING = "PENDING"
        RUNNING = "RUNNING"
        SUCCEEDED = "SUCCEEDED"
        FAILED = "FAILED"

    kind = models.CharField(max_length=20, choices=Kind.choices)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    inputs = models.JSONField(default=dict)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(null=True, blank=True)  # None until known
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    origin = models.CharField(max_length=100, blank=True)  # "console", "cli:<os user>", "beat"
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)  # the running worker is alive
    runs = models.PositiveIntegerField(default=0)  # times a worker picked it up (retries show)

    class Meta:
        db_table = "templates_admin_job"
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk} ({self.state})"

    @property
    def is_finished(self) -> bool:
        return self.state in (self.State.SUCCEEDED, self.State.FAILED)


class JobStep(models.Model):
    """One item of a job (a dead-letter message, a journal row). Written once its side effect
    happened, so a retried job skips it instead of repeating it."""

    class Outcome(models.TextChoices):
        PENDING = "pending"  # selected, not yet done
        DONE = "done"
        SKIPPED = "skipped"
        FAILED = "failed"

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="steps")
    key = models.CharField(max_length=300)
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.PENDING)
    detail = models.JSONField(default=dict)
    at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "templates_admin_jobstep"
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["job", "key"], name="job_step_once")]

    def __str__(self) -> str:
        return f"{self.job_id}/{self.key}: {self.outcome}"
