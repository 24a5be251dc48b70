"""LOG_LEVEL is read as the Go service reads it: any case, WARN or WARNING, offsets; an unknown
value is INFO with one error line, never a traceback at start-up."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from emailops.logging import go_log_level, report_log_level

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("text", "level"),
    [
        ("DEBUG", logging.DEBUG),
        ("debug", logging.DEBUG),
        ("Info", logging.INFO),
        ("WARN", logging.WARNING),
        ("warning", logging.WARNING),
        ("error", logging.ERROR),
        ("INFO+2", 25),  # slog 2, halfway between INFO and WARN
        ("info-4", logging.DEBUG),
        ("WARN+4", logging.ERROR),
        ("DEBUG-4", 1),  # below DEBUG, never NOTSET (0 would defer to the root logger)
    ],
)
def test_go_level_texts_map_to_python_levels(text, level):
    assert go_log_level(text) == (level, "")


@pytest.mark.parametrize("text", ["verbose", "", "INFO+", "+2", "INFO*2"])
def test_an_unknown_level_is_info_with_a_complaint(text):
    level, complaint = go_log_level(text)
    assert level == logging.INFO
    assert "using INFO" in complaint


def test_the_complaint_is_one_logfmt_line():
    out = io.StringIO()
    report_log_level("LOG_LEVEL='x' is not DEBUG, INFO, WARN or ERROR: using INFO", out)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    assert "level=error" in lines[0] and "event=settings.log_level_unknown" in lines[0]
    report_log_level("", out)
    assert len(out.getvalue().splitlines()) == 1


def _check(level: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "LOG_LEVEL": level, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("level", ["debug", "Warn", "INFO+2"])
def test_a_go_spelled_level_starts_a_process_quietly(level):
    done = _check(level)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "log_level_unknown" not in done.stderr


def test_an_unknown_level_starts_a_process_with_one_error_line():
    done = _check("chatty")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("log_level_unknown") == 1
