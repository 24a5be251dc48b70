"""A management command run outside the stack's environment says so in one line (what to
source or set), instead of a 43-line traceback ending in ImproperlyConfigured."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_email_log_without_the_environment_says_what_to_do_in_one_line(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "email_log", "recipient", "a@example.com"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},  # no DJANGO_DEBUG, no secret key
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("manage.py email_log: DJANGO_SECRET_KEY must be set")
    assert "run `source .devstack.env` first" in lines[0].lower()
