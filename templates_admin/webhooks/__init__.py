"""The webhooks area: endpoints (services), fan-out and delivery of webhook events (delivery),
the HTTP post (sender) and the destination check's resolver (destination). Uses no other area."""
