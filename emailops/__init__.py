"""emailops: operations console and SQS consumer for the transactional email pipeline."""

from emailops.celery import app as celery_app

__all__ = ["celery_app"]
