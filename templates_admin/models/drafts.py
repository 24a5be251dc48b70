"""The drafts area's models: drafts and the published versions of template files."""

from __future__ import annotations

import re

from django.conf import settings
from django.db import models

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
