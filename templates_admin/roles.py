"""The console's groups and the permissions each one holds (created by a data migration)."""

from __future__ import annotations

SUPPORT = "Support"
SUPPORT_LEADS = "Support leads"
TEMPLATE_OWNERS = "Template owners"

MANAGE_MAPPINGS = "templates_admin.manage_mappings"
PREVIEW_TEMPLATES = "templates_admin.preview_templates"
SEND_TEST_EMAIL = "templates_admin.send_test_email"
SEARCH_JOURNAL = "templates_admin.search_journal"
RESEND_EMAIL = "templates_admin.resend_email"
VIEW_SUPPRESSIONS = "templates_admin.view_suppressions"
REMOVE_SUPPRESSION = "templates_admin.remove_suppression"
# The journal-read audit trail (JournalReadAudit; granted by migration 0005).
VIEW_READ_AUDIT = "templates_admin.view_journalreadaudit"
VIEW_JOBS = "templates_admin.view_jobs"
REDRIVE_DEAD_LETTERS = "templates_admin.redrive_dead_letters"
BULK_RESEND = "templates_admin.bulk_resend"
CHECK_TEMPLATES = "templates_admin.check_templates"
ERASE_RECIPIENT = "templates_admin.erase_recipient"
# The reputation guard's pauses (ReputationPauseChange; granted by migration 0008).
MANAGE_REPUTATION = "templates_admin.manage_reputation"
VIEW_PAUSE_CHANGES = "templates_admin.view_reputationpausechange"
# Webhook endpoints (their secrets), delivery logs and replays (WebhooksPage; migration 0013).
# In no group: superusers, or someone granted it by name.
MANAGE_WEBHOOKS = "templates_admin.manage_webhooks"
# Email categories (CategoryDefinition; granted by migration 0015): template owners define them and
# put mappings in them. Deleting one is a superuser's call (preferences keep naming its slug).
VIEW_CATEGORIES = "templates_admin.view_categorydefinition"
ADD_CATEGORY = "templates_admin.add_categorydefinition"
CHANGE_CATEGORY = "templates_admin.change_categorydefinition"

# Template owners read the journal too: the send-test page links to the send it made.
# Removing a suppression lets email reach the address again, like a resend: the same people.
# Operations (migration 0004): everyone sees jobs and the dead-letter queue; redrive and bulk
# resend are for Support leads and up; the template check is the template owners'.
GROUP_PERMISSIONS: dict[str, list[str]] = {
    SUPPORT: [SEARCH_JOURNAL, VIEW_SUPPRESSIONS, VIEW_JOBS],
    SUPPORT_LEADS: [
        SEARCH_JOURNAL,
        RESEND_EMAIL,
        VIEW_SUPPRESSIONS,
        REMOVE_SUPPRESSION,
        VIEW_READ_AUDIT,
        VIEW_JOBS,
        REDRIVE_DEAD_LETTERS,
        BULK_RESEND,
        ERASE_RECIPIENT,  # migration 0006: erasure requests are a Support lead's call
        MANAGE_REPUTATION,  # migration 0008
        VIEW_PAUSE_CHANGES,
    ],
    TEMPLATE_OWNERS: [
        MANAGE_MAPPINGS,
        PREVIEW_TEMPLATES,
        SEND_TEST_EMAIL,
        SEARCH_JOURNAL,
        RESEND_EMAIL,
        VIEW_SUPPRESSIONS,
        REMOVE_SUPPRESSION,
        VIEW_JOBS,
        REDRIVE_DEAD_LETTERS,
        BULK_RESEND,
        CHECK_TEMPLATES,
        VIEW_CATEGORIES,  # migration 0015
        ADD_CATEGORY,
        CHANGE_CATEGORY,
    ],
}


def groups_granting(permissions: tuple[str, ...] | list[str]) -> list[str]:
    """The console groups that hold every one of ``permissions``, in GROUP_PERMISSIONS' order."""
    return [
        group
        for group, held in GROUP_PERMISSIONS.items()
        if all(permission in held for permission in permissions)
    ]


def refusal_words(permissions: tuple[str, ...] | list[str]) -> str:
    """One line for a refused page: which group grants access."""
    groups = groups_granting(permissions)
    if not groups:
        return "Only a superuser may open this page."
    named = " or ".join(groups)
    plural = "groups" if len(groups) > 1 else "group"
    return (
        f"This page is for the {named} {plural}: ask a console administrator to add you "
        f"to {'one of them' if len(groups) > 1 else 'it'}."
    )
