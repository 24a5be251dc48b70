"""What the two queue consumers' commands share: their queue flags and their stop signals."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

__all__ = ["add_queue_arguments", "stop_signals"]


def add_queue_arguments(parser) -> None:
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
