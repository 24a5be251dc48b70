"""Console data, one module per area (the app label stays ``templates_admin``). Mappings and the
journal live in DynamoDB; the Django DB holds users, groups, the audit trails, jobs and drafts. The
unmanaged placeholder models (``pages.ConsolePage``) give the admin index its entries and carry the
console's permissions.

Models are the console's bottom layer: any area may use any of them; they import no area."""

from templates_admin.models.dashboard import OpsReading
from templates_admin.models.drafts import TemplateDraft, TemplateVersion, key_organization
from templates_admin.models.jobs import Job, JobStep, OperationsPage
from templates_admin.models.journal import EmailAction, EmailJournalPage, JournalReadAudit
from templates_admin.models.mappings import CategoryDefinition, MappingChange, TemplateMappingPage
from templates_admin.models.reputation import ReputationPauseChange
from templates_admin.models.suppression import (
    PreferenceResubscribe,
    SuppressionListPage,
    SuppressionRemoval,
)
from templates_admin.models.webhooks import (
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    WebhooksPage,
)

__all__ = [
    "CategoryDefinition",
    "EmailAction",
    "EmailJournalPage",
    "Job",
    "JobStep",
    "JournalReadAudit",
    "MappingChange",
    "OperationsPage",
    "OpsReading",
    "PreferenceResubscribe",
    "ReputationPauseChange",
    "SuppressionListPage",
    "SuppressionRemoval",
    "TemplateDraft",
    "TemplateMappingPage",
    "TemplateVersion",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookEndpoint",
    "WebhooksPage",
    "key_organization",
]
