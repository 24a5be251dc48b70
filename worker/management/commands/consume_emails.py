"""python manage.py consume_emails — long-poll the request queue and send the emails."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from emailops import container
from worker.cli import add_queue_arguments, stop_signals
from worker.stats import serve_metrics
from worker.wiring import build_consumer

EXIT_UNHEALTHY = 3  # stopped while a configuration fault kept records from going out
EXIT_THREAD_DIED = 4  # one of its threads died: restart the whole process


class Command(BaseCommand):
    help = "Consume EmailRequest messages from EMAIL_SERVICE_QUEUE_URL: claim, send, mark."
    # The system checks import the URLconf (the console, the API): a consumer checks its own
    # settings when it wires itself, and starts without them.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        add_queue_arguments(parser)
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
        first = f"finishing in-flight records (up to {options['stop_timeout']:g} s), then stopping"
        with stop_signals(self.stderr.write, first) as (stop, force):
            consumer = build_consumer(
                concurrency=concurrency,
                stop_timeout=options["stop_timeout"],
                allow_no_dead_letter_queue=options["allow_no_dead_letter_queue"],
            )
            port = options["metrics_port"]
            port = settings.CONSUMER_METRICS_PORT if port is None else port
            if port:
                state = container.current().reputation_state
                serve_metrics(
                    port,
                    consumer.stats,
                    consumer.health,
                    lambda: len(consumer.inflight),
                    reputation=lambda: (state.evaluation(), state.entries()),
                )
            stats = consumer.run(
                stop=stop,
                force=force,
                until_empty=options["until_empty"],
                max_messages=options["max_messages"],
                wait_time=options["wait_time"],
                batch_size=options["batch_size"],
            )
        self.stdout.write(
            f"received={stats.received} deleted={stats.deleted} sent={stats.sent} "
            f"retried={stats.retried} waiting={stats.waiting} "
            f"dead_lettered={stats.dead_lettered} healthy={consumer.health.healthy}"
        )
        if consumer.failure:
            self.stderr.write(f"unhealthy: thread {consumer.failure} died (see the ERROR above)")
            raise SystemExit(EXIT_THREAD_DIED)
        if not consumer.health.healthy:
            self.stderr.write(f"unhealthy: {consumer.health.fault}")
            raise SystemExit(EXIT_UNHEALTHY)
