"""python manage.py bootstrap_aws — create (or complete) the tables, queues, bucket and sender."""

from __future__ import annotations

from email.utils import parseaddr

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from emailops import wiring
from emailops.aws import provision
from emailops.aws.clients import aws_client
from emailops.core.errors import EmailOpsError


class Command(BaseCommand):
    help = (
        "Idempotently create the templates, journal and suppression tables (GSIs, TTL), the queue "
        "and its dead-letter queue, the template bucket, and verify the sender identity."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--queue-name",
            default="",
            help="queue to create (default: the name in EMAIL_SERVICE_QUEUE_URL)",
        )
        parser.add_argument(
            "--visibility-timeout",
            type=int,
            default=60,
            help="for a new queue; also the consumer's claim lease (default 60)",
        )

    def handle(self, *args, queue_name, visibility_timeout, **options):
        report = self.stdout.write
        queue_name = queue_name or settings.EMAIL_SERVICE_QUEUE_URL.rstrip("/").rsplit("/", 1)[-1]
        if not queue_name:
            raise CommandError("set EMAIL_SERVICE_QUEUE_URL or pass --queue-name")
        try:
            dynamodb = aws_client("dynamodb", region=settings.AWS_REGION)
            provision.ensure_templates_table(dynamodb, wiring.require("TEMPLATES_TABLE"), report)
            provision.ensure_journal_table(dynamodb, wiring.require("JOURNAL_TABLE"), report)
            provision.ensure_suppression_table(
                dynamodb, wiring.require("SUPPRESSION_TABLE"), report
            )
            provision.ensure_queue(
                aws_client("sqs", region=settings.AWS_REGION),
                queue_name,
                report,
                visibility_timeout=visibility_timeout,
            )
            wiring.template_store().create_bucket()
            report(f"bucket {settings.S3_BUCKET}: ready")
            sender = parseaddr(wiring.sender_addresses()[0])[1]
            wiring.sender().verify_sender(sender)
            report(f"sender {sender}: verification requested")
        except EmailOpsError as exc:
            raise CommandError(exc.describe()) from exc
