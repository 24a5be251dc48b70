"""python manage.py consume_ses_events — apply SES delivery events to the journal."""

from __future__ import annotations

from emailops import container
from worker.cli import QueueCommand, stop_signals
from worker.events_consumer import build_events_consumer


class Command(QueueCommand):
    help = (
        "Consume SES events (configuration set → SNS → SQS) from SES_EVENTS_QUEUE_URL: update the "
        "journal rows' delivery status and timeline, suppress hard bounces and complaints."
    )
    concurrency_help = "events handled at once (default SES_EVENTS_CONCURRENCY, 16)"

    def handle(self, *args, until_empty, max_messages, wait_time, concurrency=None, **options):
        if concurrency is not None:
            concurrency = self.concurrency(concurrency, 1)
        first = "finishing the current batch, then stopping"
        with stop_signals(self.say, first, interrupt_on_second=True) as (stop, _):
            consumer = build_events_consumer(adapters=container.current(), concurrency=concurrency)
            stats = consumer.run(
                stop=stop, until_empty=until_empty, max_messages=max_messages, wait_time=wait_time
            )
        self.totals(
            f"received={stats.received} applied={stats.applied} duplicates={stats.duplicates} "
            f"stored={stats.stored} retried={stats.retried} dead_lettered={stats.dead_lettered} "
            f"healthy={consumer.health.healthy}"
        )
        self.exit(consumer.failure, consumer.health)
