"""Writes of the template lifecycle: create and discard drafts, publish, roll back.

Publishing is the only way a draft reaches a published key, and it is conditional twice over:
the S3 write carries If-Match (the ETag we checked) or If-None-Match (the file was absent), and
the version row is unique per (key, parent_version), so of two owners publishing from the same
version the second always gets DraftConflict. A file the console has not seen before (uploaded by
hand or by the Go deploy) is kept as an "original" version before it is first replaced.
"""

from __future__ import annotations

import logging
import uuid

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from emailops import container
from emailops.aws.s3 import PublishedObject
from emailops.core.errors import ConcurrentUpdate
from emailops.core.events import EventLog
from templates_admin.drafts.layout import (
    draft_object_key,
    history_object_key,
    validate_template_key,
)
from templates_admin.mappings import services as mapping_services
from templates_admin.models import TemplateDraft, TemplateVersion

__all__ = [
    "CheckFailed",
    "DraftConflict",
    "DraftNotOpen",
    "WarningsNotAccepted",
    "draft_create",
    "draft_discard",
    "draft_publish",
    "template_rollback",
]

log = EventLog(logging.getLogger("templates_admin.drafts"))


class DraftConflict(ConcurrentUpdate):
    """The published file changed since the draft's base version (or a concurrent publish won)."""

    def __init__(self, *, key: str, base_version: str, current_version: str, reason: str = ""):
        self.base_version = base_version
        self.current_version = current_version
        super().__init__(
            "publish template",
            key=key,
            reason=reason
            or (
                f"the published file is now version {current_version or '(none)'}, "
                f"the draft started from {base_version or '(none)'}"
            ),
        )


class CheckFailed(Exception):
    """The check found errors: nothing was published."""

    def __init__(self, findings: list) -> None:
        self.findings = findings
        super().__init__(f"the check found {len(findings)} error(s)")


class WarningsNotAccepted(Exception):
    """The check found warnings and the owner has not confirmed them."""

    def __init__(self, findings: list) -> None:
        self.findings = findings
        super().__init__(f"the check found {len(findings)} warning(s); confirm to publish")


class DraftNotOpen(ValidationError):
    """The draft was already published or discarded."""


def _username(user: AbstractBaseUser | None) -> str:
    return user.get_username() if user is not None else ""


def draft_create(
    *,
    key: str,
    source: str | None,
    subject: str | None,
    message_id: str,
    user: AbstractBaseUser | None,
) -> TemplateDraft:
    """A draft of ``key`` from the version published now. ``source`` None starts from the
    published source; "" (with a subject) changes only the mapping's subject."""
    validate_template_key(key)
    subject = (subject or "").strip()
    if subject and not message_id:
        raise ValidationError("A subject change needs the messageId whose mapping it changes.")
    if message_id and container.current().mapping_store.get_mapping(message_id) is None:
        raise ValidationError(f"There is no mapping for messageId {message_id!r}.")
    current = container.current().template_store.read_object(key)
    if source is None:
        source = current.data.decode("utf-8") if current else ""
    if not source and not subject:
        raise ValidationError("The draft changes nothing: give a source or a subject.")
    with transaction.atomic():
        draft = TemplateDraft.objects.create(
            message_id=message_id,
            key=key,
            source=source,
            subject=subject,
            base_version=current.version if current else "",
            author=user,
        )
        if source:
            container.current().template_store.write_internal(
                draft_object_key(draft.pk, key), source.encode("utf-8")
            )
    log.info("template.draft_created", draft=draft.pk, key=key, user=_username(user))
    return draft


def _open_draft(draft_id: int) -> TemplateDraft:
    draft = TemplateDraft.objects.get(pk=draft_id)
    if not draft.is_open:
        state = "published" if draft.published_version else "discarded"
        raise DraftNotOpen(f"Draft #{draft_id} was already {state}.")
    return draft


def draft_discard(*, draft_id: int, user: AbstractBaseUser | None) -> None:
    draft = _open_draft(draft_id)
    draft.discarded_at = timezone.now()
    draft.save(update_fields=["discarded_at"])
    log.info("template.draft_discarded", draft=draft_id, key=draft.key, user=_username(user))


def _latest(key: str) -> TemplateVersion | None:
    return TemplateVersion.objects.filter(key=key).order_by("-at", "-id").first()


def _write_version(
    *,
    key: str,
    data: bytes,
    base_version: str | None,
    kind: str,
    user: AbstractBaseUser | None,
    reason: str,
    draft: TemplateDraft | None = None,
    restored_from: str = "",
) -> TemplateVersion:
    """Publish ``data`` at ``key`` as a new version, if the key still holds ``base_version``
    (None: whatever it holds now, as read here). Raises DraftConflict."""
    store = container.current().template_store
    current: PublishedObject | None = store.read_object(key)
    current_version = current.version if current else ""
    if base_version is not None and current_version != base_version:
        raise DraftConflict(key=key, base_version=base_version, current_version=current_version)
    version_id = uuid.uuid4().hex
    try:
        with transaction.atomic():
            # The parent is the version we read and replace, never "the latest row now": a
            # publish that committed since our read then shares our parent and the unique
            # (key, parent_version) constraint refuses the second insert.
            latest = _latest(key)
            parent = current_version or (latest.version_id if latest else "")
            known = TemplateVersion.objects.filter(key=key, version_id=current_version)
            if current is not None and not known.exists():
                # The original-bytes rule: what was there before the console is history too.
                original_key = history_object_key(key, current_version)
                store.write_internal(original_key, current.data)
                TemplateVersion.objects.create(
                    key=key,
                    version_id=current_version,
                    etag=current.etag,
                    parent_version=latest.version_id if latest else "",
                    author=None,
                    reason="in the bucket before this publish (not published by the console)",
                    kind=TemplateVersion.Kind.ORIGINAL,
                    history_key=original_key,
                )
            history_key = history_object_key(key, version_id)
            store.write_internal(history_key, data)
            version = TemplateVersion.objects.create(
                key=key,
                version_id=version_id,
                parent_version=parent,
                author=user,
                reason=reason,
                kind=kind,
                history_key=history_key,
                draft=draft,
                restored_from=restored_from,
            )
            written = store.publish_template(key, data, version_id=version_id, replacing=current)
            version.etag = written.etag
            version.version_id = written.version  # the S3 VersionId on a versioned bucket
            version.save(update_fields=["etag", "version_id"])
    except IntegrityError:
        # Another publish from the same version committed first (unique key + parent_version).
        raise DraftConflict(
            key=key,
            base_version=current_version,
            current_version="(another publish)",
            reason="someone else published this file at the same time; reload and try again",
        ) from None
    except ConcurrentUpdate as exc:
        if isinstance(exc, DraftConflict):
            raise
        raise DraftConflict(
            key=key, base_version=current_version, current_version="(changed)", reason=exc.reason
        ) from exc
    log.info(
        f"template.{kind}",
        key=key,
        version=version.version_id,
        parent=version.parent_version,
        user=_username(user),
        reason=reason,
    )
    return version


def draft_publish(
    *,
    draft_id: int,
    user: AbstractBaseUser | None,
    reason: str,
    accept_warnings: bool = False,
) -> TemplateVersion | None:
    """Check, then publish the draft's file (if it changes one) and the mapping's subject (if it
    changes it, through the audited mapping service). Returns the new version; None for a draft
    that only changed the subject. Raises CheckFailed, WarningsNotAccepted, DraftConflict."""
    from templates_admin.drafts.check import check_draft  # the check engine may import us

    draft = _open_draft(draft_id)
    findings = check_draft(draft=draft)
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        raise CheckFailed(errors)
    warnings = [f for f in findings if f.severity == "warning"]
    if warnings and not accept_warnings:
        raise WarningsNotAccepted(warnings)
    mapping = None
    if draft.subject:
        # Looked up before the file is written: a deleted mapping stops the publish early.
        mapping = container.current().mapping_store.get_mapping(draft.message_id)
        if mapping is None:
            raise ValidationError(f"There is no mapping for messageId {draft.message_id!r}.")
    version = None
    if draft.source:
        version = _write_version(
            key=draft.key,
            data=draft.source.encode("utf-8"),
            base_version=draft.base_version,
            kind=TemplateVersion.Kind.PUBLISH,
            user=user,
            reason=reason,
            draft=draft,
        )
    published = version.version_id if version else ""
    if mapping is not None and mapping.subject != draft.subject:
        saved = mapping_services.mapping_update(
            message_id=mapping.message_id,
            template_file=mapping.template_file,
            subject=draft.subject,
            expected_version=mapping.version,
            user=user,
        )
        published = published or f"mapping-v{saved.version}"
    draft.published_version = published or "unchanged"
    draft.save(update_fields=["published_version"])
    return version


def template_rollback(
    *, key: str, version_id: str, user: AbstractBaseUser | None, reason: str
) -> TemplateVersion:
    """Publish an older version's exact bytes as a new version (audited like a publish)."""
    validate_template_key(key)
    try:
        target = TemplateVersion.objects.get(key=key, version_id=version_id)
    except TemplateVersion.DoesNotExist:
        raise ValidationError(f"{key} has no version {version_id!r}.") from None
    data = container.current().template_store.read_internal(target.history_key)
    if data is None:
        raise ValidationError(f"The bytes of {key} version {version_id} are missing from S3.")
    return _write_version(
        key=key,
        data=data,
        base_version=None,
        kind=TemplateVersion.Kind.ROLLBACK,
        user=user,
        reason=reason,
        restored_from=version_id,
    )
