"""python manage.py consume_ses_events — apply SES delivery events to the journal."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from worker.cli import add_queue_arguments, stop_signals
from worker.events_consumer import build_events_consumer


class Command(BaseCommand):
    help = (
        "Consume SES events (configuration set → SNS → SQS) from SES_EVENTS_QUEUE_URL: update the "
        "journal rows' delivery status and timeline, suppress hard bounces and complaints."
    )
    # The system checks import the URLconf (the console, the API): a consumer checks its own
    # settings when it wires itself, and starts without them.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        add_queue_arguments(parser)
        parser.add_argument(
            "--concurrency",
            type=int,
            default=None,
            metavar="N",
            help="events handled at once (default SES_EVENTS_CONCURRENCY, 16)",
        )

    def handle(self, *args, until_empty, max_messages, wait_time, concurrency=None, **options):
        first = "finishing the current batch, then stopping"
        with stop_signals(self.stderr.write, first, interrupt_on_second=True) as (stop, _):
            stats = build_events_consumer(concurrency=concurrency).run(
                stop=stop, until_empty=until_empty, max_messages=max_messages, wait_time=wait_time
            )
        self.stdout.write(
            f"received={stats.received} applied={stats.applied} duplicates={stats.duplicates} "
            f"stored={stats.stored} retried={stats.retried} dead_lettered={stats.dead_lettered}"
        )
