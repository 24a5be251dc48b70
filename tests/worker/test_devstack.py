"""What `make run` prints works when pasted as is: no activated virtualenv, no exported settings."""

from __future__ import annotations

import subprocess
from pathlib import Path

from worker.management.commands.devstack import shell_path, try_it, write_env_file

ROOT = Path(__file__).resolve().parents[2]


def test_the_printed_lines_run_in_a_bare_shell(tmp_path):
    env_file = tmp_path / ".devstack.env"
    write_env_file(env_file, "http://127.0.0.1:1")
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
