"""The webhooks area's model: its admin entry and permission. The endpoints, deliveries and
attempts it shows are the ``webhooks`` app's."""

from __future__ import annotations

from templates_admin.models.pages import ConsolePage


class WebhooksPage(ConsolePage):
    """Placeholder (no table): the admin entry and permission of the webhooks area (admins)."""

    class Meta(ConsolePage.Meta):
        verbose_name = "Webhooks"
        verbose_name_plural = "Webhooks"
        permissions = [("manage_webhooks", "Can manage webhook endpoints and replay deliveries")]
