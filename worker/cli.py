"""What the two queue consumers' commands share: their queue flags, their stop signals and how
they exit (``worker.queue_worker.ExitCode``)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

from django.core.management.base import BaseCommand, CommandError

from worker.queue_worker import exit_status
from worker.stats import Health

__all__ = ["QueueCommand", "add_queue_arguments", "add_range_argument", "stop_signals"]


class QueueCommand(BaseCommand):
    """A queue consumer's command: its flags, and its exit code after a run."""

    # The system checks import the URLconf (the console, the API): a consumer checks its own
    # settings when it wires itself, and starts without them.
    requires_system_checks: list[str] = []
    concurrency_help = "records worked on at once"

    verbosity = 1

    def execute(self, *args, **options):
        self.verbosity = options.get("verbosity", 1)
        return super().execute(*args, **options)

    def say(self, text: str) -> None:
        """A line for the person watching (the stop signal taken, the run's totals): ``-v 0``
        leaves it out (devstack's children: Ctrl-C there ends with devstack's one line)."""
        if self.verbosity >= 1:
            self.stderr.write(text)

    def totals(self, text: str) -> None:
        """The run's totals on stdout, unless ``-v 0``."""
        if self.verbosity >= 1:
            self.stdout.write(text)

    def add_arguments(self, parser) -> None:
        add_queue_arguments(parser)
        parser.add_argument(
            "--concurrency", type=int, default=None, metavar="N", help=self.concurrency_help
        )

    @staticmethod
    def concurrency(given: int | None, default: int) -> int:
        concurrency = given or default
        if concurrency < 1:
            raise CommandError("--concurrency must be at least 1")
        return concurrency

    def exit(self, failure: str, health: Health) -> None:
        """Exit 4 if a thread died or hung, 3 if stopped unhealthy (docs/commands.md)."""
        code, said = exit_status(failure, health)
        if code:
            self.stderr.write(said)
            raise SystemExit(int(code))


def add_range_argument(
    parser, flag: str, *, low: int, high: int, default: int, metavar: str, help: str
) -> None:
    parser.add_argument(
        flag,
        type=int,
        default=default,
        choices=range(low, high + 1),
        metavar=metavar,
        help=f"{help}, {low}-{high} (default {default})",
    )


def add_queue_arguments(parser) -> None:
    parser.add_argument(
        "--until-empty",
        action="store_true",
        help="exit once a receive returns nothing and nothing is in flight (tests, cron)",
    )
    parser.add_argument(
        "--max-messages", type=int, default=None, help="stop after receiving this many messages"
    )
    add_range_argument(
        parser, "--wait-time", low=0, high=20, default=20, metavar="S", help="long-poll wait (s)"
    )


@contextlib.contextmanager
def stop_signals(
    say: Callable[[str], None], first: str, *, interrupt_on_second: bool = False
) -> Iterator[tuple[threading.Event, threading.Event]]:
    """SIGINT/SIGTERM set ``stop`` (saying ``first``); a second one sets ``force`` too, or
    interrupts the main thread where the loop has no other way to give up."""
    stop, force = threading.Event(), threading.Event()

    def on_signal(signum, _frame):
        if stop.is_set():
            force.set()
            say(f"signal {signum}: stopping now")
            if interrupt_on_second:
                raise KeyboardInterrupt
            return
        say(f"signal {signum}: {first} (again to force)")
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop, force
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
