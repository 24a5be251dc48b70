"""The file half of a publish, as steps a later attempt can finish (docs/templates.md, "Publishing").

1. Record the intent: a *pending* version row with the content's SHA-256 (and, first time the
   console replaces a file, the "original" row for what was there). It claims the unique
   (key, parent_version) slot, so a concurrent publish conflicts before anything is written.
2. Write the published key (If-Match / If-None-Match).
3. The caller's own steps (a draft's mapping subject), then ``mark_published`` in the caller's
   closing transaction (with the draft's close).

A failure after any step leaves a pending row that describes the write. Every attempt first
*settles* the key: a pending row whose bytes are live now is recorded as published, so the history
never lacks a file that is out and never calls it an "original". A retry of the same change
finds its own pending row (the draft's, or a rollback's by target and hash) and continues from
it instead of starting again.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from emailops.aws.s3 import PublishedObject, S3TemplateStore
from emailops.core.errors import ConcurrentUpdate
from emailops.core.events import EventLog
from templates_admin.drafts.layout import history_object_key, history_source_key
from templates_admin.models import TemplateDraft, TemplateVersion

__all__ = [
    "DraftConflict",
    "FileChange",
    "abandon_pending",
    "content_digest",
    "latest_published",
    "mark_published",
    "publish_file",
]

log = EventLog(logging.getLogger("templates_admin.drafts"))

PENDING, PUBLISHED = TemplateVersion.State.PENDING, TemplateVersion.State.PUBLISHED


class DraftConflict(ConcurrentUpdate):
    """The published file changed since the draft's base version (or a concurrent publish won)."""

    def __init__(
        self,
        *,
        key: str,
        base_version: str,
        current_version: str,
        reason: str = "",
        finish: bool = False,
    ):
        self.base_version = base_version
        self.current_version = current_version
        self.finish = finish  # the file is out: publishing the same draft again finishes it
        super().__init__(
            "publish template",
            key=key,
            reason=reason
            or (
                f"the published file is now version {current_version or '(none)'}, "
                f"the draft started from {base_version or '(none)'}"
            ),
        )


@dataclass(frozen=True)
class FileChange:
    """Bytes to publish at ``key`` if it still holds ``base_version`` (None: whatever it holds)."""

    key: str
    data: bytes
    base_version: str | None
    kind: str
    user: AbstractBaseUser | None
    reason: str
    draft: TemplateDraft | None = None
    restored_from: str = ""
    # the template's own source when ``data`` is compiled from it (MJML, CSS inlined): kept in
    # the history beside the bytes that go out
    source: bytes | None = None

    def audit_fields(self) -> dict[str, object]:
        """Who, why and how, as the version row records them."""
        return {
            "author": self.user,
            "reason": self.reason,
            "kind": self.kind,
            "draft": self.draft,
            "restored_from": self.restored_from,
        }


def content_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def latest_published(key: str) -> TemplateVersion | None:
    return TemplateVersion.objects.filter(key=key, state=PUBLISHED).order_by("-at", "-id").first()


def mark_published(version: TemplateVersion) -> None:
    """The last step: the version's file is out. Call it inside the caller's closing transaction."""
    if version.state == PUBLISHED:
        return
    version.state = PUBLISHED
    version.save(update_fields=["state", "version_id", "etag"])


def publish_file(change: FileChange, *, template_store: S3TemplateStore) -> TemplateVersion:
    """Steps 1 and 2 (or what an earlier attempt left of them). Returns the version row with the
    written version and ETag; still pending unless an earlier attempt's file was settled.
    Raises DraftConflict (nothing of this attempt is left then)."""
    store = template_store
    digest = content_digest(change.data)
    current = store.read_object(change.key)
    mine = _own_attempt(change, digest)
    settled = _settle(change.key, current)
    if mine is not None and settled is not None and settled.pk == mine.pk:
        return settled
    if mine is not None and mine.state == PUBLISHED:
        return mine
    current_version = _version_of(current)
    original = None
    if mine is None:
        if change.base_version is not None and current_version != change.base_version:
            raise DraftConflict(
                key=change.key, base_version=change.base_version, current_version=current_version
            )
        mine, original = _record_intent(change, current, digest, store=store)
    elif mine.parent_version != _parent_of(change.key, current):
        _release(mine)
        raise DraftConflict(
            key=change.key,
            base_version=mine.parent_version,
            current_version=current_version,
            reason="the published file changed since the last attempt; reload and try again",
        )
    written = _write(mine, change.data, current, original=original, store=store)
    mine.version_id = written.version  # the S3 VersionId on a versioned bucket
    mine.etag = written.etag
    return mine


def abandon_pending(version: TemplateVersion, *, template_store: S3TemplateStore) -> None:
    """An attempt nobody will finish (its draft is discarded): if its file is live it is recorded
    as published (it is what is sent), else its row goes and the key is free again."""
    settled = _settle(version.key, template_store.read_object(version.key))
    if settled is None or settled.pk != version.pk:
        _release(version)


def _own_attempt(change: FileChange, digest: str) -> TemplateVersion | None:
    """What an earlier attempt of this same change recorded: the draft's version (one per
    draft), or a pending rollback to the same version with the same bytes."""
    versions = TemplateVersion.objects.filter(key=change.key).exclude(
        kind=TemplateVersion.Kind.ORIGINAL
    )
    if change.draft is not None:
        return versions.filter(draft=change.draft).first()
    return versions.filter(
        state=PENDING, kind=change.kind, restored_from=change.restored_from, content_sha256=digest
    ).first()


def _settle(key: str, current: PublishedObject | None) -> TemplateVersion | None:
    """A pending version whose bytes are live went out before its attempt stopped: record it."""
    if current is None:
        return None
    if TemplateVersion.objects.filter(
        key=key, version_id=current.version, state=PUBLISHED
    ).exists():
        return None  # the live file is a recorded version; pending rows of it are not written
    pending = TemplateVersion.objects.filter(key=key, state=PENDING)
    found = (
        pending.filter(version_id=current.version).first()
        or pending.filter(content_sha256=content_digest(current.data)).order_by("id").first()
    )
    if found is None:
        return None
    found.version_id, found.etag = current.version, current.etag
    mark_published(found)
    log.info("template.publish_settled", key=key, version=found.version_id, draft=found.draft_id)
    return found


def _version_of(current: PublishedObject | None) -> str:
    return current.version if current else ""


def _parent_of(key: str, current: PublishedObject | None) -> str:
    # The version we read and replace, never "the latest row now": a publish that committed since
    # our read then shares our parent and the unique (key, parent_version) constraint refuses us.
    if current is not None:
        return current.version
    latest = latest_published(key)
    return latest.version_id if latest else ""


def _record_intent(
    change: FileChange, current: PublishedObject | None, digest: str, *, store: S3TemplateStore
) -> tuple[TemplateVersion, TemplateVersion | None]:
    key = change.key
    version_id = uuid.uuid4().hex
    history_key = history_object_key(key, version_id)
    store.write_internal(history_key, change.data)  # unreferenced until the row commits
    if change.source is not None:
        store.write_internal(history_source_key(key, version_id), change.source)
    try:
        with transaction.atomic():
            parent = _parent_of(key, current)
            original = None
            known = TemplateVersion.objects.filter(key=key, version_id=_version_of(current))
            if current is not None and not known.exists():
                original = _record_original(key, current, store=store)
            version = TemplateVersion.objects.create(
                key=key,
                version_id=version_id,
                parent_version=parent,
                history_key=history_key,
                state=PENDING,
                content_sha256=digest,
                **change.audit_fields(),
            )
    except IntegrityError:
        raise _slot_taken(key, current) from None
    return version, original


def _record_original(
    key: str, current: PublishedObject, *, store: S3TemplateStore
) -> TemplateVersion:
    """The original-bytes rule: what was there before the console is history too."""
    original_key = history_object_key(key, current.version)
    store.write_internal(original_key, current.data)
    latest = latest_published(key)
    original = TemplateVersion.objects.create(
        key=key,
        version_id=current.version,
        etag=current.etag,
        parent_version=latest.version_id if latest else "",
        author=None,
        reason="in the bucket before this publish (not published by the console)",
        kind=TemplateVersion.Kind.ORIGINAL,
        history_key=original_key,
        content_sha256=content_digest(current.data),
    )
    if current.modified is not None:  # when it was uploaded, not when it was replaced
        original.at = current.modified
        original.save(update_fields=["at"])
    return original


def _slot_taken(key: str, current: PublishedObject | None) -> DraftConflict:
    current_version = _version_of(current)
    holder = TemplateVersion.objects.filter(
        key=key, parent_version=_parent_of(key, current), state=PENDING
    ).first()
    if holder is not None and holder.draft_id is not None:
        reason = (
            f"draft #{holder.draft_id}'s publish of this file did not finish; "
            "publish that draft again (or discard it) first"
        )
    else:
        reason = "someone else published this file at the same time; reload and try again"
    return DraftConflict(
        key=key, base_version=current_version, current_version="(another publish)", reason=reason
    )


def _write(
    mine: TemplateVersion,
    data: bytes,
    current: PublishedObject | None,
    *,
    original: TemplateVersion | None,
    store: S3TemplateStore,
) -> PublishedObject:
    try:
        return store.publish_template(mine.key, data, version_id=mine.version_id, replacing=current)
    except ConcurrentUpdate as exc:
        now = store.read_object(mine.key)
        if now is not None and content_digest(now.data) == mine.content_sha256:
            return now  # another attempt of this same change wrote it meanwhile
        _release(mine, original)
        raise DraftConflict(
            key=mine.key,
            base_version=mine.parent_version,
            current_version="(changed)",
            reason=exc.reason,
        ) from exc


def _release(mine: TemplateVersion, original: TemplateVersion | None = None) -> None:
    """Give up an attempt whose file never went out: its rows go, and the slot is free again."""
    with transaction.atomic():
        TemplateVersion.objects.filter(pk=mine.pk, state=PENDING).delete()
        if original is not None:
            original.delete()
