"""The operations area's model: its admin entry and permissions. The jobs it shows and starts are
the ``jobs`` app's."""

from __future__ import annotations

from templates_admin.models.pages import ConsolePage


class OperationsPage(ConsolePage):
    """Placeholder (no table): the admin entry and permissions for operations run as jobs."""

    class Meta(ConsolePage.Meta):
        verbose_name = "Operation"
        verbose_name_plural = "Operations"
        permissions = [
            ("view_jobs", "Can see operations, their progress and results, and the DLQ"),
            ("redrive_dead_letters", "Can redrive dead-lettered requests"),
            ("bulk_resend", "Can resend a batch of emails"),
            ("check_templates", "Can run the template check"),
            ("erase_recipient", "Can erase every journal row of an email address"),
        ]
