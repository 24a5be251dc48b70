"""Reads of the template lifecycle: drafts, versions, their exact sources, diffs."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError

from emailops.aws.s3 import PublishedObject, S3TemplateStore
from emailops.core.line_endings import ENDING_NAMES, line_ending, lines, only_line_endings_differ
from emailops.core.ports import TemplateMapping
from templates_admin.drafts.layout import history_source_key, validate_template_key
from templates_admin.models import TemplateDraft, TemplateVersion

if TYPE_CHECKING:
    from emailops.aws.mappings import DynamoMappingStore

__all__ = [
    "VersionNotFound",
    "draft_get",
    "drafts_for_message",
    "published_files",
    "published_mappings",
    "published_source",
    "template_history",
    "template_version_get",
    "version_diff",
    "version_source",
]


class VersionNotFound(LookupError):
    """No such version of this key in the history (nor published now)."""


def drafts_for_message(*, message_id: str) -> list[TemplateDraft]:
    """Open drafts (neither published nor discarded) of one messageId, newest first."""
    drafts = TemplateDraft.objects.filter(
        message_id=message_id, published_version="", discarded_at__isnull=True
    )
    return list(drafts.select_related("author").order_by("-created_at", "-id"))


def draft_get(*, draft_id: int) -> TemplateDraft:
    """Raises TemplateDraft.DoesNotExist."""
    return TemplateDraft.objects.select_related("author").get(pk=draft_id)


def template_history(*, key: str) -> list[TemplateVersion]:
    """Every published version of ``key``, newest first (not a publish still in progress)."""
    versions = TemplateVersion.objects.filter(key=key, state=TemplateVersion.State.PUBLISHED)
    versions = versions.select_related("author", "draft")
    return list(versions.order_by("-at", "-id"))


def template_version_get(*, key: str, version_id: str) -> TemplateVersion | None:
    published = TemplateVersion.objects.filter(state=TemplateVersion.State.PUBLISHED)
    return published.filter(key=key, version_id=version_id).first()


def published_source(*, key: str, template_store: S3TemplateStore) -> tuple[str | None, str]:
    """(source, version_id) published at ``key`` now; (None, "") when there is no such file."""
    validate_template_key(key)
    current = template_store.read_object(key)
    if current is None:
        return None, ""
    return current.data.decode("utf-8"), current.version


def written_source(current: PublishedObject, *, key: str, template_store: S3TemplateStore) -> str:
    """What the published file ``current`` was written as: its MJML (or its HTML before CSS
    inlining) when the console compiled it at publish, else its own bytes."""
    written = template_store.read_internal(history_source_key(key, current.version))
    return (written if written is not None else current.data).decode("utf-8")


def version_source(*, key: str, version_id: str, template_store: S3TemplateStore) -> str:
    """The exact source of one version: from the history (the MJML of a version compiled from
    it), or the published file when it is that version and has no history yet (a file the
    console never replaced). Raises VersionNotFound."""
    version = template_version_get(key=key, version_id=version_id)
    if version is not None:
        data = template_store.read_internal(
            history_source_key(key, version_id)
        ) or template_store.read_internal(version.history_key)
        if data is not None:
            return data.decode("utf-8")
    else:
        source, current = published_source(key=key, template_store=template_store)
        if source is not None and current == version_id:
            return source
    raise VersionNotFound(f"{key} has no version {version_id!r}")


def version_diff(*, key: str, old: str, new: str, template_store: S3TemplateStore) -> str:
    """A unified diff between two versions of ``key`` (by version_id), line by line: a change of
    line endings alone is one line saying so, never every line removed and added again."""
    before = version_source(key=key, version_id=old, template_store=template_store)
    after = version_source(key=key, version_id=new, template_store=template_store)
    if only_line_endings_differ(before, after):
        return (
            f"@@ only the line endings differ: {ENDING_NAMES[line_ending(before)]} in {old}, "
            f"{ENDING_NAMES[line_ending(after)]} in {new} @@\n"
        )
    return "\n".join(
        difflib.unified_diff(
            lines(before), lines(after), fromfile=f"{key}@{old}", tofile=f"{key}@{new}", lineterm=""
        )
    )


def _is_template_key(key: str) -> bool:
    try:
        validate_template_key(key)
    except ValidationError:
        return False
    return True


def published_files(*, template_store: S3TemplateStore) -> list[PublishedObject]:
    """Every published template (``default/`` and ``custom/O{org}/``) with its exact bytes."""
    keys = [k for prefix in ("default/", "custom/") for k in template_store.list_keys(prefix)]
    found = (template_store.read_object(key) for key in sorted(keys) if _is_template_key(key))
    return [obj for obj in found if obj is not None]


def published_mappings(*, mapping_store: DynamoMappingStore) -> list[TemplateMapping]:
    return sorted(mapping_store.list_mappings(), key=lambda m: m.message_id)
