"""Console data. Mappings and the journal live in DynamoDB; the Django DB holds only users, groups
and the audit trail. The unmanaged placeholder models give the admin index its entries
("Template mappings", "Email journal", "Suppression list") and carry the console's permissions."""

from __future__ import annotations

import re

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
    # An API token's visible prefix (text, not a key: the console does not depend on the API app).
    token_prefix = models.CharField(max_length=16, blank=True, db_index=True)
    action = models.CharField(max_length=40)  # "search", "detail", "email", "recipient", "id"...
    query = models.CharField(max_length=500, db_index=True)  # the search text or the row's Id
    filters = models.JSONField(default=dict, blank=True)
    # How many rows the read handed over, where that is not one (a CSV export), once known.
    rows = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name = "Journal read"
        verbose_name_plural = "Journal reads"
        # Only the view permission: the trail is written by the code, never edited by people.
        default_permissions = ("view",)

    def __str__(self) -> str:
        return f"{self.actor} {self.action} {self.query} at {self.at:%Y-%m-%d %H:%M}"


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


class OperationsPage(models.Model):
    """Placeholder (no table): the admin entry and permissions for operations run as jobs."""

    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "Operation"
        verbose_name_plural = "Operations"
        permissions = [
            ("view_jobs", "Can see operations, their progress and results, and the DLQ"),
            ("redrive_dead_letters", "Can redrive dead-lettered requests"),
            ("bulk_resend", "Can resend a batch of emails"),
            ("check_templates", "Can run the template check"),
            ("erase_recipient", "Can erase every journal row of an email address"),
        ]

    def __str__(self) -> str:
        return "Operations"


class Job(models.Model):
    """One long operation (redrive, bulk resend, template check): its inputs, state, progress and
    result. It is also the audit record: who started what, when, and what came of it."""

    class Kind(models.TextChoices):
        DLQ_REDRIVE = "dlq_redrive", "Dead-letter redrive"
        DLQ_LIST = "dlq_list", "Dead-letter listing"
        BULK_RESEND = "bulk_resend", "Bulk resend"
        TEMPLATE_CHECK = "template_check", "Template check"
        ERASE_RECIPIENT = "erase_recipient", "Recipient erasure"

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
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["job", "key"], name="job_step_once")]

    def __str__(self) -> str:
        return f"{self.job_id}/{self.key}: {self.outcome}"


class OpsReading(models.Model):
    """The last reading of a periodic check (dead-letter depth, stuck claims), shared by the beat
    worker that takes it and the console that shows it (the cache is per process)."""

    name = models.CharField(max_length=50, primary_key=True)
    value = models.JSONField(default=dict)
    at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} at {self.at:%Y-%m-%d %H:%M}"


_ORGANIZATION_KEY = re.compile(r"^custom/O(\d+)/[^/]+$")


def key_organization(key: str) -> str | None:
    """ "367" for ``custom/O367/welcome.html``, None for a default template's key."""
    match = _ORGANIZATION_KEY.match(key)
    return match[1] if match else None


class TemplateDraft(models.Model):
    """A proposed change to one published template file (and/or the mapping's subject). Drafts
    never touch the published keys; only publishing does. ``base_version`` is the published
    version it started from, so publishing over someone else's newer version is a conflict."""

    message_id = models.CharField(max_length=200, blank=True, db_index=True)
    key = models.CharField(max_length=500, db_index=True)  # default/{file} or custom/O{org}/{file}
    source = models.TextField(blank=True)  # "" when only the subject changes
    # "" = unchanged. Text, not 998 characters: an over-long subject must reach the check that names it.
    subject = models.TextField(blank=True)
    base_version = models.CharField(max_length=200, blank=True)  # "" = the file did not exist
    # The mapping's version the subject change started from (None: no subject change, or a
    # draft older than this field): publishing over someone else's newer mapping is a conflict.
    mapping_version = models.IntegerField(null=True, blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    published_version = models.CharField(max_length=200, blank=True)
    discarded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"draft #{self.pk} of {self.key}"

    @property
    def organization(self) -> str | None:
        return key_organization(self.key)

    @property
    def is_open(self) -> bool:
        return not self.published_version and self.discarded_at is None


class TemplateVersion(models.Model):
    """One published version of a template file, and the audit record of how it got there. Its
    exact bytes are kept at ``history_key`` (under ``_emailops/history/``), so any version can be
    shown, diffed, rendered for a journal row, or published again by a rollback."""

    class Kind(models.TextChoices):
        ORIGINAL = "original"  # a file that was there before (by hand, by the Go deploy)
        PUBLISH = "publish"
        ROLLBACK = "rollback"

    class State(models.TextChoices):
        # Recorded before the file is written, so S3 is never ahead of the history; a publish
        # that stopped part-way is found by its content hash and finished by the next attempt.
        PENDING = "pending"
        PUBLISHED = "published"

    key = models.CharField(max_length=500, db_index=True)
    # The S3 VersionId on a versioned bucket, else our id in the object's metadata (an original
    # file's ETag): what the composer reads back and the journal records as TemplateVersion.
    version_id = models.CharField(max_length=200)
    etag = models.CharField(max_length=200, blank=True)
    # The version this one replaced ("" for the first). Unique per key: of two publishers that
    # started from the same version, the second one's insert fails; that is the conflict check.
    parent_version = models.CharField(max_length=200, blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    at = models.DateTimeField(auto_now_add=True, db_index=True)
    reason = models.TextField(blank=True)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    history_key = models.CharField(max_length=700)
    draft = models.ForeignKey(
        TemplateDraft, null=True, blank=True, on_delete=models.SET_NULL, related_name="versions"
    )
    # What the rollback returned to (a version_id of this key), for the history page.
    restored_from = models.CharField(max_length=200, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PUBLISHED)
    content_sha256 = models.CharField(max_length=64, blank=True)  # of the exact bytes

    class Meta:
        ordering = ["-at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["key", "version_id"], name="template_version_once"),
            models.UniqueConstraint(
                fields=["key", "parent_version"], name="template_version_one_successor"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key} @ {self.version_id} ({self.kind})"

    @property
    def organization(self) -> str | None:
        return key_organization(self.key)


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
