"""What `make run` prints works when pasted as is: no activated virtualenv, no exported settings."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.devstack import running_devstack
from worker.management.commands.devstack import (
    create_admin_args,
    shell_path,
    stack_environment,
    stack_processes,
    try_it,
    write_env_file,
)

ROOT = Path(__file__).resolve().parents[2]


def test_the_printed_lines_run_in_a_bare_shell(tmp_path):
    env_file = tmp_path / ".devstack.env"
    write_env_file(env_file, "http://127.0.0.1:1", 8000)
    lines = try_it(env_file, ROOT).strip().splitlines()
    assert "enqueue_email --message-id added-to-team" in lines[-1]
    # --help: loads settings and the command (as the real line would) without needing moto up.
    script = "set -e\n" + "\n".join(line.strip() for line in lines) + " --help\n"
    result = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,  # another shell, somewhere else
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "--message-id" in result.stdout


def test_shell_paths():
    cwd = Path("/srv/my project")
    assert shell_path(cwd / ".devstack.env", cwd) == "./.devstack.env"
    assert shell_path(cwd / ".venv/bin/python", cwd) == ".venv/bin/python"
    assert shell_path(Path("/opt/py/bin/python"), cwd) == "/opt/py/bin/python"
    assert shell_path(Path("/srv/my project/x"), Path("/srv")) == "'my project/x'"


# --- whole by default: every capability on, with no setting ---------------------------------------


def test_the_stack_links_unsubscribes_to_its_own_console(monkeypatch):
    monkeypatch.delenv("PUBLIC_BASE_URL", raising=False)
    assert stack_environment("http://127.0.0.1:1", 8123)["PUBLIC_BASE_URL"] == (
        "http://127.0.0.1:8123"
    )
    # .env copied from .env.example says PUBLIC_BASE_URL= (production's "none"): still linked
    monkeypatch.setenv("PUBLIC_BASE_URL", "")
    assert stack_environment("http://127.0.0.1:1", 8123)["PUBLIC_BASE_URL"] == (
        "http://127.0.0.1:8123"
    )
    monkeypatch.setenv("PUBLIC_BASE_URL", "https://emails.example.org")  # one of the developer's
    assert stack_environment("http://127.0.0.1:1", 8123)["PUBLIC_BASE_URL"] == (
        "https://emails.example.org"
    )


def test_the_stacks_settings_leave_every_capability_on(monkeypatch):
    """The stack's environment, read by a fresh process as its children read it: the outbox on
    (the default: the stack sets nothing for it) and unsubscribe links to the console."""
    for name in ("WEBHOOK_OUTBOX", "PUBLIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    env = stack_environment("http://127.0.0.1:1", 8123)
    script = (
        "from emailops.config import Config; c = Config.from_settings(); "
        "print(c.webhooks.outbox, c.preferences.public_base_url)"
    )
    shown = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "emailops.settings", **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    assert shown == ["durable", "http://127.0.0.1:8123"]


def test_the_stack_runs_a_worker_on_its_webhook_queue_and_beat(tmp_path, monkeypatch):
    monkeypatch.delenv("WEBHOOK_QUEUE", raising=False)
    env = stack_environment("http://127.0.0.1:1", 8123)
    assert env["WEBHOOK_QUEUE"] == "emailops-devstack-8123-webhooks"  # two stacks: two queues
    processes = {
        name: command for name, command, _ in stack_processes(["manage.py"], 8123, env, tmp_path)
    }
    consuming = {
        name: command[command.index("-Q") + 1]
        for name, command in processes.items()
        if "worker" in command and "-Q" in command
    }
    assert consuming == {"webhook worker": "emailops-devstack-8123-webhooks"}
    assert "-Q" not in processes["celery worker"]  # the jobs' queue, CELERY_TASK_DEFAULT_QUEUE
    assert "beat" in processes["celery beat"]
    assert "consume_ses_events" in processes["events consumer"]
    # the env file other shells source names the same queues: `webhooks add` looks at this one
    write_env_file(tmp_path / ".devstack.env", "http://127.0.0.1:1", 8123)
    assert (
        "export WEBHOOK_QUEUE=emailops-devstack-8123-webhooks\n"
        in (tmp_path / ".devstack.env").read_text()
    )


# --- stopping: Ctrl-C ------------------------------------------------------------------------------


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (children, grandchildren: celery's pool), from /proc."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended while we looked
        if fields[0] != "Z":
            parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.e2e
def test_ctrl_c_stops_every_child_quietly_and_exits_0(tmp_path):
    with running_devstack(tmp_path) as stack:
        children = _descendants(stack.process.pid)
        # console, two consumers, the celery worker, the webhook worker and beat
        assert len(children) >= 6, children
        time.sleep(3)  # let the children finish starting: Ctrl-C comes at any time, usually later
        before = len(stack.lines)
        os.killpg(stack.process.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        code = stack.process.wait(timeout=90)
        stack.reader.join(timeout=30)
    lines = stack.lines
    # The README's promise: Ctrl-C ends with one line (no "signal 15: …" from each consumer).
    assert "".join(lines[before:]).strip().splitlines() == [
        "stopped: console, consumer, events consumer, celery worker, webhook worker, celery beat, "
        "moto"
    ], "".join(lines[before:])
    output = "".join(lines)
    assert code == 0, output
    assert "Traceback" not in output, output
    # A quiet first run: Celery's banners are in the log file, not over the console block.
    assert "-------------- celery@" not in output and "beat: Starting" not in output, output
    celery_log = (tmp_path / ".devstack-celery.log").read_text()
    assert "celery@" in celery_log and "beat: Starting" in celery_log
    assert "exited" not in output, output
    assert output.rstrip().splitlines()[-1] == (
        "stopped: console, consumer, events consumer, celery worker, webhook worker, celery beat, "
        "moto"
    ), output
    assert not [pid for pid in children if _alive(pid)], output


def test_the_dev_admin_password_may_start_with_a_dash():
    """token_urlsafe gives a leading "-" one time in 64: `--password -Dj…` made argparse fail and
    `make run` stop at its set-up (seen in a test run)."""
    from templates_admin.management.commands.create_console_user import Command

    command, *args = create_admin_args("-DjYJ9frRorS")
    options = Command().create_parser("manage.py", command).parse_args(args)
    assert (options.username, options.password, options.superuser) == (
        "admin",
        "-DjYJ9frRorS",
        True,
    )
