"""python manage.py consume_emails — long-poll the request queue and send the emails."""

from __future__ import annotations

import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from worker.stats import serve_metrics
from worker.wiring import build_consumer

EXIT_UNHEALTHY = 3  # stopped while a configuration fault kept records from going out


class Command(BaseCommand):
    help = "Consume EmailRequest messages from EMAIL_SERVICE_QUEUE_URL: claim, send, mark."

    def add_arguments(self, parser):
        parser.add_argument(
            "--until-empty",
            action="store_true",
            help="exit once a receive returns nothing and nothing is in flight (tests, cron)",
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
        parser.add_argument(
            "--concurrency",
            type=int,
            default=None,
            metavar="N",
            help="records worked on at once (default CONSUMER_CONCURRENCY, 16)",
        )
        parser.add_argument(
            "--stop-timeout",
            type=float,
            default=25.0,
            metavar="S",
            help="on SIGTERM, how long in-flight records may take to finish (default 25)",
        )
        parser.add_argument(
            "--metrics-port",
            type=int,
            default=None,
            metavar="P",
            help="serve Prometheus metrics on this port (default CONSUMER_METRICS_PORT; 0 = off)",
        )
        parser.add_argument(
            "--allow-no-dead-letter-queue",
            action="store_true",
            help="run on a queue without a RedrivePolicy (unsendable requests stay on it)",
        )

    def handle(self, *args, **options):
        concurrency = options["concurrency"] or settings.CONSUMER_CONCURRENCY
        if concurrency < 1:
            raise CommandError("--concurrency must be at least 1")
        stop, force = threading.Event(), threading.Event()

        def request_stop(signum, _frame):
            if stop.is_set():
                force.set()
                self.stderr.write(f"signal {signum}: stopping now")
                return
            self.stderr.write(
                f"signal {signum}: finishing in-flight records (up to "
                f"{options['stop_timeout']:g} s), then stopping (again to force)"
            )
            stop.set()

        previous = {
            sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            consumer = build_consumer(
                concurrency=concurrency,
                stop_timeout=options["stop_timeout"],
                allow_no_dead_letter_queue=options["allow_no_dead_letter_queue"],
            )
            port = options["metrics_port"]
            port = settings.CONSUMER_METRICS_PORT if port is None else port
            if port:
                serve_metrics(port, consumer.stats, consumer.health, lambda: len(consumer.inflight))
            stats = consumer.run(
                stop=stop,
                force=force,
                until_empty=options["until_empty"],
                max_messages=options["max_messages"],
                wait_time=options["wait_time"],
                batch_size=options["batch_size"],
            )
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        self.stdout.write(
            f"received={stats.received} deleted={stats.deleted} sent={stats.sent} "
            f"retried={stats.retried} waiting={stats.waiting} "
            f"dead_lettered={stats.dead_lettered} healthy={consumer.health.healthy}"
        )
        if not consumer.health.healthy:
            self.stderr.write(f"unhealthy: {consumer.health.fault}")
            raise SystemExit(EXIT_UNHEALTHY)
