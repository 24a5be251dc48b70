"""Webhook delivery: the endpoints (URL, secrets, filters, health), one delivery per (endpoint,
event) and its attempts, the fan-out of an emitted event, each attempt (signed, checked against
SSRF, retried with back-off), and whether a worker reads the webhook queue. Below the console,
which shows and drives them (``templates_admin.webhooks``: pages, the replay job); the pure rules
are ``emailops.core.webhook*``."""
