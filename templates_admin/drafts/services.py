"""Writes of the template lifecycle: create and discard drafts, publish, roll back.

Publishing is the only way a draft reaches a published key, and it is conditional twice over:
the S3 write carries If-Match (the ETag we checked) or If-None-Match (the file was absent), and
the version row is unique per (key, parent_version), so of two owners publishing from the same
version the second always gets DraftConflict. A file the console has not seen before (uploaded by
hand or by the Go deploy) is kept as an "original" version before it is first replaced. The
steps and their order (so that any failure leaves what the next attempt finishes) are in
``publishing`` and docs/templates.md.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from emailops.core.errors import ConcurrentUpdate
from emailops.core.events import EventLog
from emailops.core.line_endings import with_line_endings_of
from emailops.core.ports import TemplateMapping
from emailops.core.template_source import publishable
from templates_admin.drafts.check import draft_verdict
from templates_admin.drafts.layout import (
    draft_object_key,
    history_source_key,
    validate_template_key,
)
from templates_admin.drafts.publishing import (
    DraftConflict,
    FileChange,
    abandon_pending,
    mark_published,
    publish_file,
)
from templates_admin.drafts.selectors import written_source
from templates_admin.mappings import services as mapping_services
from templates_admin.models import TemplateDraft, TemplateVersion

if TYPE_CHECKING:
    from emailops.aws.s3 import S3TemplateStore
    from emailops.container import Container

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
    adapters: Container,
    from_editor: bool = False,
) -> TemplateDraft:
    """A draft of ``key`` from the version published now. ``source`` None starts from the
    published source; "" (with a subject) changes only the mapping's subject. Text ``from_editor``
    takes the line endings of the file it replaces (LF for a new file)."""
    validate_template_key(key)
    subject = (subject or "").strip()
    if subject and not message_id:
        raise ValidationError("A subject change needs the messageId whose mapping it changes.")
    mapping = adapters.mapping_store.get_mapping(message_id) if message_id else None
    if message_id and mapping is None:
        raise ValidationError(f"There is no mapping for messageId {message_id!r}.")
    current = adapters.template_store.read_object(key)
    published = current.data.decode("utf-8") if current else None
    if current is not None:  # what the owner edits: the MJML, not the HTML compiled from it
        published = written_source(current, key=key, template_store=adapters.template_store)
    if source is None:
        source = published or ""
    elif from_editor:
        source = with_line_endings_of(source, published)
    if not source and not subject:
        raise ValidationError("The draft changes nothing: give a source or a subject.")
    with transaction.atomic():
        draft = TemplateDraft.objects.create(
            message_id=message_id,
            key=key,
            source=source,
            subject=subject,
            base_version=current.version if current else "",
            mapping_version=mapping.version if subject and mapping else None,
            author=user,
        )
        if source:
            adapters.template_store.write_internal(
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


def draft_discard(
    *, draft_id: int, user: AbstractBaseUser | None, template_store: S3TemplateStore
) -> None:
    draft = _open_draft(draft_id)
    for stopped in draft.versions.filter(state=TemplateVersion.State.PENDING):
        # A publish of it stopped part-way: the history stays true.
        abandon_pending(stopped, template_store=template_store)
    draft.discarded_at = timezone.now()
    draft.save(update_fields=["discarded_at"])
    log.info("template.draft_discarded", draft=draft_id, key=draft.key, user=_username(user))


def draft_publish(
    *,
    draft_id: int,
    user: AbstractBaseUser | None,
    reason: str,
    adapters: Container,
    accept_warnings: bool = False,
) -> TemplateVersion | None:
    """Check, then publish the draft's file (if it changes one) and the mapping's subject (if it
    changes it, through the audited mapping service). Returns the new version; None for a draft
    that only changed the subject. Raises CheckFailed, WarningsNotAccepted (warnings the draft
    introduces, unconfirmed), DraftConflict."""
    draft = _open_draft(draft_id)
    verdict = draft_verdict(draft=draft, adapters=adapters)
    if verdict.errors:
        raise CheckFailed(verdict.errors)
    # Only what the draft introduces needs confirming: a warning the published version has
    # too is no news about this draft.
    if verdict.new_warnings and not accept_warnings:
        raise WarningsNotAccepted(verdict.new_warnings)
    mapping = _subject_preflight(draft, adapters)
    version = None
    if draft.source:
        # MJML compiled, CSS inlined where the template asks: the consumers read HTML
        out = publishable(draft.key, draft.source)
        version = publish_file(
            FileChange(
                key=draft.key,
                data=out.encode("utf-8"),
                base_version=draft.base_version,
                kind=TemplateVersion.Kind.PUBLISH,
                user=user,
                reason=reason,
                draft=draft,
                source=draft.source.encode("utf-8") if out != draft.source else None,
            ),
            template_store=adapters.template_store,
        )
    saved = _subject_update(
        draft, mapping, user=user, file_out=version is not None, adapters=adapters
    )
    published = version.version_id if version else ""
    # Ours changed it: written now, or by an earlier attempt (the version moved since the draft).
    if saved is not None and (
        saved is not mapping or draft.mapping_version not in (None, saved.version)
    ):
        published = published or f"mapping-v{saved.version}"
    with transaction.atomic():  # the last step: the version is out and the draft closed, together
        if version is not None:
            mark_published(version)
        draft.published_version = published or "unchanged"
        draft.save(update_fields=["published_version"])
    if version is not None:
        _log_published(version, user=user)
    return version


def _subject_preflight(draft: TemplateDraft, adapters: Container) -> TemplateMapping | None:
    """Everything that could stop the subject change, checked before any file goes out: the
    mapping exists, has not changed since the draft was made, and takes the new subject."""
    if not draft.subject:
        return None
    mapping = adapters.mapping_store.get_mapping(draft.message_id)
    if mapping is None:
        raise ValidationError(f"There is no mapping for messageId {draft.message_id!r}.")
    if mapping.subject == draft.subject:
        return mapping  # nothing to change (or an earlier attempt changed it)
    file_started = draft.versions.exists()  # an earlier attempt's file may be out: finish it
    moved = draft.mapping_version is not None and mapping.version != draft.mapping_version
    if moved and not file_started:
        raise DraftConflict(
            key=f"mapping {draft.message_id}",
            base_version=f"v{draft.mapping_version}",
            current_version=f"v{mapping.version}",
            reason=(
                f"the mapping was changed since the draft was made (version {mapping.version}, "
                f"the draft started from {draft.mapping_version}); reload and try again"
            ),
        )
    mapping_services.mapping_validate(
        template_file=mapping.template_file,
        subject=draft.subject,
        template_store=adapters.template_store,
        renderer=adapters.renderer,
    )
    return mapping


def _subject_update(
    draft: TemplateDraft,
    mapping: TemplateMapping | None,
    *,
    user: AbstractBaseUser | None,
    file_out: bool,
    adapters: Container,
) -> TemplateMapping | None:
    if mapping is None or mapping.subject == draft.subject:
        return mapping
    try:
        return mapping_services.mapping_update(
            message_id=mapping.message_id,
            template_file=mapping.template_file,
            subject=draft.subject,
            expected_version=mapping.version,
            user=user,
            adapters=adapters,
        )
    except ConcurrentUpdate as exc:
        # Someone saved the mapping between our read and our write. With the file out, the
        # draft stays open and its next publish finishes the subject on the fresh mapping.
        finish = "; its file is published: publish again to finish" if file_out else ""
        raise DraftConflict(
            key=f"mapping {mapping.message_id}",
            base_version=f"v{mapping.version}",
            current_version="(changed)",
            reason=f"{exc.reason}{finish}",
            finish=file_out,
        ) from exc


def _log_published(version: TemplateVersion, *, user: AbstractBaseUser | None) -> None:
    log.info(
        f"template.{version.kind}",
        key=version.key,
        version=version.version_id,
        parent=version.parent_version,
        user=_username(user),
        reason=version.reason,
    )


def template_rollback(
    *,
    key: str,
    version_id: str,
    user: AbstractBaseUser | None,
    reason: str,
    template_store: S3TemplateStore,
) -> TemplateVersion:
    """Publish an older version's exact bytes as a new version (audited like a publish)."""
    validate_template_key(key)
    try:
        target = TemplateVersion.objects.get(
            key=key, version_id=version_id, state=TemplateVersion.State.PUBLISHED
        )
    except TemplateVersion.DoesNotExist:
        raise ValidationError(f"{key} has no version {version_id!r}.") from None
    data = template_store.read_internal(target.history_key)
    if data is None:
        raise ValidationError(f"The bytes of {key} version {version_id} are missing from S3.")
    version = publish_file(
        FileChange(
            key=key,
            data=data,
            source=template_store.read_internal(history_source_key(key, version_id)),
            base_version=None,
            kind=TemplateVersion.Kind.ROLLBACK,
            user=user,
            reason=reason,
            restored_from=version_id,
        ),
        template_store=template_store,
    )
    with transaction.atomic():
        mark_published(version)
    _log_published(version, user=user)
    return version
