"""The queue worker's supervision: watched threads with heartbeats, the message budget
(``--max-messages``), hand-back of held messages, and the exit codes.

Both consumers (``worker.consumer`` for email requests, ``worker.events_consumer`` for SES events)
are built on ``worker.queue_loop.QueueWorker``, which runs every thread through a ``Supervisor``:

- a thread that raises is reported (``consumer.thread_died``);
- a thread that stops beating for longer than its ``hung_after`` is reported too
  (``consumer.thread_hung``): a receive that never returns, or a handler stuck on a dead
  connection, is as much a silent gap as a dead thread;
- either way the consumer turns unhealthy for good, its stop is set, what it holds is handed back
  (visible again at once), and the command exits with ``ExitCode.THREAD_FAILED`` so the
  orchestrator restarts the whole process.

Exit codes (docs/commands.md): 0 a clean stop; 3 (``UNHEALTHY``) stopped while a configuration
fault kept records from going out; 4 (``THREAD_FAILED``) one of its threads died or hung.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from enum import IntEnum

from emailops.aws.sqs import QueueMessage, SqsQueue
from emailops.core.errors import EmailOpsError
from emailops.core.events import EventLog, logfmt
from worker.stats import Health

__all__ = [
    "ExitCode",
    "MessageBudget",
    "Supervised",
    "Supervisor",
    "exit_status",
    "hand_back",
]

logger = logging.getLogger("worker.queue_worker")


class ExitCode(IntEnum):
    OK = 0
    UNHEALTHY = 3  # stopped while a configuration fault kept records from going out
    THREAD_FAILED = 4  # one of its threads died or hung: restart the whole process


def exit_status(failure: str, health: Health) -> tuple[ExitCode, str]:
    """The command's exit code after a run, and what to say on stderr ("" for a clean stop)."""
    if failure:
        return ExitCode.THREAD_FAILED, f"unhealthy: {health.fault} (see the ERROR above)"
    if not health.healthy:
        return ExitCode.UNHEALTHY, f"unhealthy: {health.fault}"
    return ExitCode.OK, ""


class Supervisor:
    """Starts watched threads and watches their heartbeats (see the module doc).

    ``failure`` names the first thread that died or hung in the current run ("" if none)."""

    def __init__(
        self,
        *,
        health: Health,
        clock: Callable[[], float] = time.monotonic,
        check_every: float = 1.0,
    ) -> None:
        self.health = health
        self.clock = clock
        self.check_every = check_every
        self.failure = ""
        self._stop: threading.Event | None = None
        self._beats: dict[str, tuple[float, float]] = {}  # name → (last beat, hung after)
        self._lock = threading.Lock()
        self._watchdog_stop = threading.Event()
        self._watchdog: threading.Thread | None = None

    def start(self, stop: threading.Event) -> None:
        """A new run: ``stop`` is set when a thread fails."""
        self.failure, self._stop = "", stop
        with self._lock:
            self._beats.clear()
        self._watchdog_stop = threading.Event()
        self._watchdog = threading.Thread(
            target=self._watch_heartbeats, args=(self._watchdog_stop,), name="watchdog", daemon=True
        )
        self._watchdog.start()

    def close(self) -> None:
        self._watchdog_stop.set()
        if self._watchdog is not None:
            self._watchdog.join(2)

    def watch(
        self,
        target: Callable[..., None],
        *args: object,
        name: str,
        hung_after: float | None = None,
    ) -> threading.Thread:
        """Run ``target(*args)`` on a daemon thread; with ``hung_after`` it must call ``beat()``
        at least that often."""
        if hung_after is not None:
            with self._lock:
                self._beats[name] = (self.clock(), hung_after)

        def guarded() -> None:
            try:
                target(*args)
            except BaseException as exc:
                self.died(name, exc)
            finally:
                with self._lock:
                    self._beats.pop(name, None)

        thread = threading.Thread(target=guarded, name=name, daemon=True)
        thread.start()
        return thread

    def beat(self, name: str | None = None) -> None:
        """The calling (or named) watched thread is alive and moving."""
        name = name or threading.current_thread().name
        with self._lock:
            if name in self._beats:
                self._beats[name] = (self.clock(), self._beats[name][1])

    def died(self, name: str, exc: BaseException) -> None:
        logger.error(
            logfmt(
                "consumer.thread_died",
                thread=name,
                error=f"{type(exc).__name__}: {exc}",
                consequence="handing back held records and exiting non-zero",
            ),
            exc_info=exc,
        )
        self._failed(name, f"thread {name} died")

    def check(self) -> list[str]:
        """Report every watched thread whose heartbeat is overdue; returns their names."""
        now = self.clock()
        with self._lock:
            hung = [n for n, (at, after) in self._beats.items() if now - at > after]
            for name in hung:  # reported once
                del self._beats[name]
        for name in hung:
            EventLog(logger).error(
                "consumer.thread_hung",
                thread=name,
                consequence="handing back held records and exiting non-zero",
            )
            self._failed(name, f"thread {name} hung")
        return hung

    def _failed(self, name: str, fault: str) -> None:
        self.health.thread_died(name, fault=fault)
        self.failure = self.failure or name
        if self._stop is not None:
            self._stop.set()

    def _watch_heartbeats(self, stop: threading.Event) -> None:
        while not stop.wait(self.check_every):
            self.check()


class Supervised:
    """A consumer whose threads a ``Supervisor`` watches; its health and failure say how the
    last run ended (``exit_status``)."""

    def __init__(self) -> None:
        self.health = Health()
        self.supervisor = Supervisor(health=self.health)

    @property
    def failure(self) -> str:
        """The thread whose death (or hang) ended the last run, "" if none failed."""
        return self.supervisor.failure


class MessageBudget:
    """``--max-messages``: how many more messages the run may receive, shared by its receivers.
    Reserved before a receive and given back for what did not come."""

    def __init__(self, limit: int | None) -> None:
        self.remaining = limit
        self._lock = threading.Lock()

    def reserve(self, wanted: int) -> int:
        """At most ``wanted``; 0 once the budget is spent (or nothing was wanted)."""
        with self._lock:
            if self.remaining is None or wanted <= 0:
                return max(0, wanted)
            allowed = min(wanted, self.remaining)
            self.remaining -= allowed
            return allowed

    def give_back(self, count: int) -> None:
        with self._lock:
            if self.remaining is not None and count > 0:
                self.remaining += count

    @property
    def spent(self) -> bool:
        with self._lock:
            return self.remaining is not None and self.remaining <= 0


def hand_back(queue: SqsQueue, messages: Sequence[QueueMessage]) -> None:
    """Make ``messages`` visible again at once, ten a call; a failed call leaves its messages to
    reappear after their visibility timeout."""
    for start in range(0, len(messages), 10):
        chunk = list(messages[start : start + 10])
        try:
            queue.release(chunk)
        except EmailOpsError as exc:
            EventLog(logger).warning(
                "consumer.hand_back_failed", count=len(chunk), error=exc.describe()
            )
