"""A category's words for recipients: the label template owners gave it in the console
(``templates_admin.categories``, the one piece of the console this page uses), else its slug."""

from __future__ import annotations

import logging

from django.db import DatabaseError

from emailops.core.events import EventLog
from templates_admin import categories

__all__ = ["category_label"]

log = EventLog(logging.getLogger("emailops.preferences"))


def category_label(slug: str) -> str:
    """The label; the slug while the console's database cannot be read: an unsubscribe must
    never fail for the words of its page."""
    try:
        return categories.category_label(slug)
    except DatabaseError as exc:
        log.warning("preference.label_unavailable", category=slug, error=repr(exc))
        return slug
