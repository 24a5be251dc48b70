"""Webhook endpoints (URL, secrets, filters, health), one delivery per (endpoint, event), and its
attempts (the delivery log). The tables keep the names they had in the console app."""

from __future__ import annotations

from django.db import models


class WebhookEndpoint(models.Model):
    url = models.URLField(max_length=2000)
    description = models.CharField(max_length=200, blank=True)
    # Standard Webhooks secrets ("whsec_..."), sealed (webhooks.secrets: Fernet tokens, never the
    # secret itself): the current one, and the one before a rotation, which still signs (beside
    # it) until previous_secret_until.
    secret = models.CharField(max_length=500)
    previous_secret = models.CharField(max_length=500, blank=True)
    previous_secret_until = models.DateTimeField(null=True, blank=True)
    # Filters; empty means any. producer: an API token's namespace, "" the queue, None any.
    event_types = models.JSONField(default=list, blank=True)
    message_ids = models.JSONField(default=list, blank=True)
    organization = models.CharField(max_length=50, blank=True)
    # None (any producer) differs from "" (the queue): null is meaningful here.
    producer = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    include_context_keys = models.BooleanField(default=False)
    enabled = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=200, blank=True)
    # Health: consecutive failed attempts; failing once WEBHOOK_FAILING_AFTER is reached (one alert).
    consecutive_failures = models.IntegerField(default=0)
    failing = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "templates_admin_webhookendpoint"
        ordering = ["id"]

    def __str__(self) -> str:
        return f"webhook {self.pk} → {self.url}"


class WebhookDelivery(models.Model):
    class State(models.TextChoices):
        PENDING = "pending"  # waiting for its (next) attempt
        SENDING = "sending"  # an attempt is in flight
        DELIVERED = "delivered"
        FAILED = "failed"  # given up: a 4xx, the retry window spent, or the endpoint disabled

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    event_id = models.CharField(max_length=50)
    event_type = models.CharField(max_length=40)
    journal_key = models.CharField(max_length=500, db_index=True)
    event = models.JSONField()  # the WebhookEvent, as emitted
    body = models.TextField()  # the payload, built once from the row: every attempt sends it
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.IntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status = models.IntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "templates_admin_webhookdelivery"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["endpoint", "event_id"], name="one_delivery_per_event")
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.event_id} → endpoint {self.endpoint_id}"


class WebhookAttempt(models.Model):
    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="log")
    at = models.DateTimeField()
    status_code = models.IntegerField(null=True, blank=True)  # None: timeout or connection error
    latency_ms = models.IntegerField(default=0)
    error = models.CharField(max_length=500, blank=True)

    class Meta:
        db_table = "templates_admin_webhookattempt"
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"attempt at {self.at}: {self.status_code}"
