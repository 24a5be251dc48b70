"""python manage.py consume_ses_events — apply SES delivery events to the journal."""

from __future__ import annotations

import signal
import threading

from django.core.management.base import BaseCommand

from worker.events_consumer import build_events_consumer


class Command(BaseCommand):
    help = (
        "Consume SES events (configuration set → SNS → SQS) from SES_EVENTS_QUEUE_URL: update the "
        "journal rows' delivery status and timeline, suppress hard bounces and complaints."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--until-empty",
            action="store_true",
            help="exit 0 once a receive returns nothing (tests, cron)",
        )
        parser.add_argument(
            "--max-messages", type=int, default=None, help="stop after receiving this many messages"
        )
        parser.add_argument(
            "--wait-time",
            type=int,
            default=20,
            choices=range(0, 21),
            metavar="S",
            help="long-poll wait, 0-20 seconds (default 20)",
        )

    def handle(self, *args, until_empty, max_messages, wait_time, **options):
        stop = threading.Event()

        def request_stop(signum, _frame):
            if stop.is_set():
                raise KeyboardInterrupt  # a second signal: give up on the current batch
            self.stderr.write(f"signal {signum}: finishing the current batch, then stopping")
            stop.set()

        previous = {
            sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            stats = build_events_consumer().run(
                stop=stop, until_empty=until_empty, max_messages=max_messages, wait_time=wait_time
            )
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        self.stdout.write(
            f"received={stats.received} applied={stats.applied} duplicates={stats.duplicates} "
            f"stored={stats.stored} retried={stats.retried} dead_lettered={stats.dead_lettered}"
        )
