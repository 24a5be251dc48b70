"""python manage.py consume_emails — long-poll the request queue and send the emails."""

from __future__ import annotations

from emailops import container
from worker.cli import QueueCommand, add_range_argument, stop_signals
from worker.stats import serve_metrics
from worker.wiring import build_consumer


class Command(QueueCommand):
    help = "Consume EmailRequest messages from EMAIL_SERVICE_QUEUE_URL: claim, send, mark."
    concurrency_help = "records worked on at once (default CONSUMER_CONCURRENCY, 16)"

    def add_arguments(self, parser):
        super().add_arguments(parser)
        add_range_argument(
            parser,
            "--batch-size",
            low=1,
            high=10,
            default=10,
            metavar="N",
            help="messages per receive",
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
            help="serve Prometheus metrics on this port (default: off)",
        )
        parser.add_argument(
            "--allow-no-dead-letter-queue",
            action="store_true",
            help="run on a queue without a RedrivePolicy (unsendable requests stay on it)",
        )

    def handle(self, *args, **options):
        adapters = container.current()
        concurrency = self.concurrency(
            options["concurrency"], adapters.config.sending.consumer_concurrency
        )
        first = f"finishing in-flight records (up to {options['stop_timeout']:g} s), then stopping"
        with stop_signals(self.say, first) as (stop, force):
            consumer = build_consumer(
                adapters=adapters,
                concurrency=concurrency,
                stop_timeout=options["stop_timeout"],
                allow_no_dead_letter_queue=options["allow_no_dead_letter_queue"],
            )
            port = options["metrics_port"]
            port = adapters.config.sending.consumer_metrics_port if port is None else port
            if port:
                state = adapters.reputation_state
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
        self.totals(
            f"received={stats.received} deleted={stats.deleted} sent={stats.sent} "
            f"retried={stats.retried} waiting={stats.waiting} "
            f"dead_lettered={stats.dead_lettered} healthy={consumer.health.healthy}"
        )
        self.exit(consumer.failure, consumer.health)
