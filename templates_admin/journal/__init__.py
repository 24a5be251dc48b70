"""Console pages: the email journal ("did they get the email?"). See templates_admin.admin for how
they are mounted; ``selectors`` and ``services`` hold the logic the pages and ``email_log`` share.
"""

from __future__ import annotations

from templates_admin.journal.urls import admin_urls
from templates_admin.journal.views import search as changelist

__all__ = ["admin_urls", "changelist"]
