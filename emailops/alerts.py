"""Alerts to a chat webhook (``ALERT_WEBHOOK_URL``): one JSON POST ``{"text": ...}``, the shape a
Slack incoming webhook (and Mattermost, and Teams' Slack-compatible ones) accepts."""

from __future__ import annotations

import json
import urllib.request

__all__ = ["post_alert"]


def post_alert(url: str, text: str, *, timeout: float = 5.0) -> None:
    """POST the alert; raises OSError (urllib's errors) when it could not be delivered."""
    request = urllib.request.Request(
        url,
        data=json.dumps({"text": text}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        response.read()
