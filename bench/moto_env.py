"""The start every benchmark shares: the project on sys.path, Django set up, moto credentials and
never a real AWS endpoint. Import it before anything from the project."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "emailops.settings")
os.environ.setdefault("DJANGO_DEBUG", "true")  # the local profile: dev secret key, plain http
os.environ.update(
    AWS_ACCESS_KEY_ID="testing",
    AWS_SECRET_ACCESS_KEY="testing",
    AWS_DEFAULT_REGION="us-east-1",
    LOG_LEVEL="WARNING",
)
os.environ.pop("AWS_ENDPOINT_URL", None)
# The send guard off: a benchmark sends hundreds a minute to one messageId, which the Go-compatible
# caps (300, 120 a minute) would hold; bench/send_rate_cap.py measures the caps themselves.
os.environ.setdefault("SES_MAX_SEND_RATE", "0")  # moto's quota says 1 a second: measure us, not it
for _cap in (
    "SEND_RATE_LIMIT_PER_MINUTE",
    "PER_MESSAGE_RATE_LIMIT_PER_MINUTE",
    "LOOP_LIMIT_PER_HOUR",
):
    os.environ.setdefault(_cap, "0")
# Webhook events off (on by default): each would leave a task in a Redis queue no benchmark worker
# reads, and the figures stay comparable with runs from before the default changed.
# bench/webhook_outage.py measures the outbox itself.
os.environ.setdefault("WEBHOOK_OUTBOX", "off")

import django  # noqa: E402

django.setup()
