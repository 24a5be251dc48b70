"""python manage.py bootstrap_aws — create (or complete) the tables, queues, bucket and sender."""

from __future__ import annotations

from email.utils import parseaddr

from django.core.management.base import BaseCommand, CommandError

from emailops import container
from emailops.aws import provision, provision_events
from emailops.aws.webhook_outbox import outbox_table
from emailops.config import require
from emailops.core.errors import EmailOpsError


class Command(BaseCommand):
    help = (
        "Idempotently create the templates, journal, suppression and preferences tables (GSIs, "
        "TTL), the queue "
        "and its dead-letter queue, the template bucket, verify the sender identity, and set up "
        "delivery events: events queue + DLQ, unmatched-events table, SNS topic, configuration set."
    )

    # The system checks import the URLconf (the console, the API): 0.4 s of every run of an
    # operator's command. `manage.py check` (CI, the deploy) runs them.
    requires_system_checks: list[str] = []

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
        parser.add_argument(
            "--max-receive-count",
            type=int,
            default=3,
            help="for a new queue: receives before SQS itself dead-letters a record (default 3, "
            "the Go service's). Our retries do not count against it; crashed consumers do",
        )

    def handle(self, *args, queue_name, visibility_timeout, max_receive_count, **options):
        report = self.stdout.write
        built = container.current()
        aws = built.config.aws
        queue_name = queue_name or aws.queue_url.rstrip("/").rsplit("/", 1)[-1]
        if not queue_name:
            raise CommandError("set EMAIL_SERVICE_QUEUE_URL or pass --queue-name")
        try:
            dynamodb = built.client("dynamodb")
            templates = require("TEMPLATES_TABLE", aws.templates_table)
            provision.ensure_templates_table(dynamodb, templates, report)
            journal = require("JOURNAL_TABLE", aws.journal_table)
            provision.ensure_journal_table(dynamodb, journal, report)
            # Always (an empty table costs nothing): turning WEBHOOK_OUTBOX on needs no re-run.
            provision.ensure_webhook_outbox_table(dynamodb, outbox_table(journal), report)
            provision.ensure_suppression_table(
                dynamodb, require("SUPPRESSION_TABLE", aws.suppression_table), report
            )
            provision.ensure_tombstone_table(
                dynamodb, require("ERASURE_TOMBSTONE_TABLE", aws.erasure_tombstone_table), report
            )
            provision.ensure_preferences_table(
                dynamodb, require("PREFERENCES_TABLE", aws.preferences_table), report
            )
            if rate_table := built.config.sending.rate_limit_table:
                provision.ensure_rate_counter_table(dynamodb, rate_table, report)
            if stats_table := built.config.reputation.stats_table:
                provision.ensure_stats_table(dynamodb, stats_table, report)
            provision.ensure_queue(
                built.client("sqs"),
                queue_name,
                report,
                visibility_timeout=visibility_timeout,
                max_receive_count=max_receive_count,
            )
            built.template_store.create_bucket()
            report(f"bucket {aws.s3_bucket}: ready")
            sender = parseaddr(built.config.sending.addresses()[0])[1]
            built.sender.verify_sender(sender)
            report(f"sender {sender}: verification requested")
            self._delivery_events(dynamodb, visibility_timeout, report)
        except EmailOpsError as exc:
            raise CommandError(exc.describe()) from exc

    def _delivery_events(self, dynamodb, visibility_timeout: int, report) -> None:
        """Events queue + DLQ, unmatched-events table, SNS topic, configuration set → topic."""
        built = container.current()
        events = built.config.events
        queue_name = events.queue_url.rstrip("/").rsplit("/", 1)[-1]
        if not queue_name:
            report("delivery events: SES_EVENTS_QUEUE_URL is not set, nothing created")
            return
        sqs = built.client("sqs")
        # Unreadable events are dead-lettered by the consumer at once; SQS's own count only
        # catches events that kept meeting AWS trouble, so it may be generous.
        queue_url = provision.ensure_queue(
            sqs, queue_name, report, visibility_timeout=visibility_timeout, max_receive_count=10
        )
        provision.ensure_unmatched_events_table(
            dynamodb, require("SES_EVENTS_UNMATCHED_TABLE", events.unmatched_table), report
        )
        topic_arn = provision_events.ensure_events_topic(
            built.client("sns"),
            sqs,
            require("SES_EVENTS_TOPIC_NAME", events.topic_name),
            queue_url,
            report,
        )
        if topic_arn not in events.topic_arns:
            # consume_ses_events refuses to start with verification on and no allow-list.
            report(f"delivery events: set SES_EVENTS_TOPIC_ARNS={topic_arn}")
        if notifications := events.notifications_topic_arn:
            provision_events.ensure_notifications_subscription(
                built.client("sns"), sqs, notifications, queue_url, report
            )
            if notifications not in events.topic_arns:
                report(f"delivery events: add {notifications} to SES_EVENTS_TOPIC_ARNS")
        if configuration_set := built.config.sending.configuration_set:
            provision_events.ensure_configuration_set(
                built.client("ses"),
                built.client("sesv2"),
                configuration_set,
                topic_arn,
                report,
            )
        else:
            report("delivery events: SES_CONFIGURATION_SET is empty, emails publish no events")
