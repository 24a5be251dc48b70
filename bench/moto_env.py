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

import django  # noqa: E402

django.setup()
