"""Where drafts and history live in the templates bucket: under ``_emailops/``, a prefix nothing
that sends email reads, so nothing kept there can change what is sent."""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError

from emailops.aws.s3 import INTERNAL_PREFIX

__all__ = [
    "draft_object_key",
    "history_object_key",
    "history_source_key",
    "validate_template_key",
]

_FILE = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_PUBLISHED_KEY = re.compile(rf"^(?:default|custom/O\d+)/{_FILE}$")


def validate_template_key(key: str) -> None:
    """A published key in the Go layout: ``default/{file}`` or ``custom/O{org}/{file}``."""
    if not _PUBLISHED_KEY.match(key) or ".." in key:
        raise ValidationError(
            f"{key!r} is not a template key: use default/FILE or custom/O<org id>/FILE"
        )


def history_object_key(key: str, version_id: str) -> str:
    """The exact bytes of one published version of ``key``."""
    return f"{INTERNAL_PREFIX}history/{key}/{version_id}"


def history_source_key(key: str, version_id: str) -> str:
    """The template's own source for a version published as bytes compiled from it (MJML, or
    HTML whose CSS was inlined at publish): what a new draft and the history's diffs show."""
    return f"{history_object_key(key, version_id)}.source"


def draft_object_key(draft_id: int, key: str) -> str:
    """A copy of a draft's source (the DB row is the record; this lets S3 tools see drafts)."""
    return f"{INTERNAL_PREFIX}drafts/{draft_id}/{key}"
