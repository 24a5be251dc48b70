"""emailops: operations console and SQS consumer for the transactional email pipeline.

The Celery app is imported lazily (``emailops.celery_app``, or ``worker.apps`` at Django start-up)
so that importing the Django-free core, ``emailops.core``, loads neither Django nor Celery.
"""

from __future__ import annotations

from typing import Any

__all__ = ["celery_app"]


def __getattr__(name: str) -> Any:
    if name == "celery_app":
        from emailops.celery import app

        return app
    raise AttributeError(f"module 'emailops' has no attribute {name!r}")
