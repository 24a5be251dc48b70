"""Console data, one module per area (the app label stays ``templates_admin``). Mappings and the
journal live in DynamoDB; the Django DB holds users, groups, the console's audit trails and
drafts (the read audit, jobs, webhooks and monitoring readings are their own apps'). The
unmanaged placeholder models (``pages.ConsolePage``) give the admin index its entries and carry the
console's permissions.

Models are the console's bottom layer: any area may use any of them; they import no area."""

from templates_admin.models.drafts import TemplateDraft, TemplateVersion, key_organization
from templates_admin.models.jobs import OperationsPage
from templates_admin.models.journal import EmailAction, EmailJournalPage, JournalReadAudit
from templates_admin.models.mappings import CategoryDefinition, MappingChange, TemplateMappingPage
from templates_admin.models.reputation import ReputationPauseChange
from templates_admin.models.suppression import (
    PreferenceResubscribe,
    SuppressionListPage,
    SuppressionRemoval,
)
from templates_admin.models.webhooks import WebhooksPage

__all__ = [
    "CategoryDefinition",
    "EmailAction",
    "EmailJournalPage",
    "JournalReadAudit",
    "MappingChange",
    "OperationsPage",
    "PreferenceResubscribe",
    "ReputationPauseChange",
    "SuppressionListPage",
    "SuppressionRemoval",
    "TemplateDraft",
    "TemplateMappingPage",
    "TemplateVersion",
    "WebhooksPage",
    "key_organization",
]
