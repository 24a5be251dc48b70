"""A queue consumer starts without what it never uses: the admin, the send API (ninja) and Celery
(bench/startup.py has the time it saves)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import sys
watched = sys.argv[2].split(",")
sys.argv = ["manage.py", sys.argv[1]]
import django
django.setup()
import importlib
try:
    importlib.import_module("worker.management.commands." + sys.argv[1])
except ModuleNotFoundError:  # one of Django's own commands
    pass
from emailops import container
loaded = [m for m in watched if m in sys.modules]
print(",".join(loaded) or "-")
"""


NEVER_IN_A_CONSUMER = ["ninja", "pydantic", "celery", "django.contrib.admin.sites", "api.services"]
# What only the console or the events consumer uses (SNS signatures, journal search, erasure).
NEVER_IN_CONSUME_EMAILS = [
    "emailops.aws.sns_verify",
    "emailops.aws.journal_search",
    "emailops.aws.erasure",
    "emailops.aws.journal_events",
    "emailops.core.delivery_handler",
]


def imported_by(command: str, watched: list[str] = NEVER_IN_A_CONSUMER) -> str:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "emailops.settings", "DJANGO_DEBUG": "true"}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, command, ",".join(watched)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


@pytest.mark.parametrize("command", ["consume_emails", "consume_ses_events"])
def test_a_consumer_imports_no_admin_api_or_celery(command):
    assert imported_by(command) == "-"


def test_the_email_consumer_imports_nothing_of_the_console_or_the_events_consumer():
    assert imported_by("consume_emails", NEVER_IN_CONSUME_EMAILS) == "-"


def test_other_commands_still_load_every_app():
    assert "celery" in imported_by("runserver")
