"""python manage.py consume_emails — long-poll the request queue and send the emails."""

from __future__ import annotations

import signal
import threading

from django.core.management.base import BaseCommand

from worker.wiring import build_consumer


class Command(BaseCommand):
    help = "Consume EmailRequest messages from EMAIL_SERVICE_QUEUE_URL: claim, send, mark."

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
        parser.add_argument(
            "--batch-size",
            type=int,
            default=10,
            choices=range(1, 11),
            metavar="N",
            help="messages per receive, 1-10 (default 10)",
        )

    def handle(self, *args, until_empty, max_messages, wait_time, batch_size, **options):
        stop = threading.Event()

        def request_stop(signum, _frame):
            if stop.is_set():
                raise KeyboardInterrupt  # a second signal: give up on the current batch
            self.stderr.write(
                f"signal {signum}: finishing the current batch, then stopping (again to force)"
            )
            stop.set()

        previous = {
            sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            consumer = build_consumer()
            stats = consumer.run(
                stop=stop,
                until_empty=until_empty,
                max_messages=max_messages,
                wait_time=wait_time,
                batch_size=batch_size,
            )
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        self.stdout.write(
            f"received={stats.received} deleted={stats.deleted} retried={stats.retried} "
            f"waiting={stats.waiting} dead_lettered={stats.dead_lettered}"
        )
