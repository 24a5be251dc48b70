"""`manage.py devstack` as a new user starts it: a fresh process group, a bare environment (no
setting of the test run's, none of the stack's: it must need none), free ports, a database of its
own. The Ctrl-C test and the "whole by default" end-to-end test drive it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.stack import free_port

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["Devstack", "running_devstack"]


@dataclass
class Devstack:
    process: subprocess.Popen
    port: int
    env: dict[str, str]  # what it was started with: a shell of the same user
    env_file: Path
    lines: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None

    def output(self) -> str:
        return "".join(self.lines)

    def celery_log(self) -> str:
        path = self.env_file.with_name(".devstack-celery.log")
        return path.read_text(errors="replace") if path.exists() else ""


@contextlib.contextmanager
def running_devstack(tmp_path: Path, *, timeout: float = 180) -> Iterator[Devstack]:
    """Start it in ``tmp_path`` and wait (bounded) for "emailops is running"; on the way out,
    SIGKILL its group if the test left it running."""
    port, moto_port = free_port(), free_port()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        **{k: os.environ[k] for k in ("REDIS_URL", "CELERY_BROKER_URL") if k in os.environ},
    }
    env_file = tmp_path / ".devstack.env"
    process = subprocess.Popen(
        [
            *(sys.executable, str(ROOT / "manage.py"), "devstack", "--port", str(port)),
            *("--moto-port", str(moto_port), "--env-file", str(env_file)),
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # a process group of its own, as a terminal's foreground job
    )
    stack = Devstack(process=process, port=port, env=env, env_file=env_file)
    ready = threading.Event()

    def read() -> None:
        for line in process.stdout:  # ends once every writer (the stack and its children) is gone
            stack.lines.append(line)
            if "emailops is running" in line:
                ready.set()
        ready.set()

    stack.reader = threading.Thread(target=read, daemon=True)
    stack.reader.start()
    try:
        assert ready.wait(timeout=timeout), stack.output()
        assert process.poll() is None, stack.output()
        yield stack
    finally:
        if process.poll() is None:
            # As Ctrl-C does: the stack stops its children (each in a session of its own, so
            # the group's SIGKILL below would leave the Celery workers and beat running).
            process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=60)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
