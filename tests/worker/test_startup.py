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
watched_then = [m for m in sys.argv[3].split(",") if m]
sys.argv = ["manage.py", sys.argv[1]]
import django
django.setup()
import importlib
try:
    importlib.import_module("worker.management.commands." + sys.argv[1])
except ModuleNotFoundError:  # one of Django's own commands
    pass
for then in watched_then:
    importlib.import_module(then)
loaded = [m for m in watched if m in sys.modules]
print(",".join(loaded) or "-")
"""


# The console's modules (the admin's autodiscovery) load with the URLs, never in a consumer.
NEVER_IN_A_CONSUMER = ["ninja", "pydantic", "celery", "templates_admin.admin", "api.services"]
# What only the console or the events consumer uses (SNS signatures, journal search, erasure).
NEVER_IN_CONSUME_EMAILS = [
    "emailops.aws.sns_verify",
    "emailops.aws.journal_search",
    "emailops.aws.erasure",
    "emailops.aws.journal_events",
    "emailops.core.delivery_handler",
]


def imported_by(
    command: str, watched: list[str] = NEVER_IN_A_CONSUMER, *, then: str = "emailops.container"
) -> str:
    """Which of ``watched`` are loaded after Django's setup for ``command`` and importing
    ``then`` (comma list)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "emailops.settings", "DJANGO_DEBUG": "true"}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, command, ",".join(watched), then],
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


def test_every_process_installs_the_same_apps():
    """No settings inspect the command line: a consumer and the web app see one app list."""
    probe = "from django.conf import settings; print(','.join(settings.INSTALLED_APPS))"
    lists = {
        subprocess.run(
            [sys.executable, "-c", f"import sys; sys.argv = ['manage.py', '{command}']; {probe}"],
            cwd=ROOT,
            env={**os.environ, "DJANGO_SETTINGS_MODULE": "emailops.settings", "DJANGO_DEBUG": "1"},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for command in ("consume_emails", "consume_ses_events", "runserver")
    }
    assert len(lists) == 1 and "api" in lists.pop()


def test_the_web_app_loads_the_console_the_api_and_celery():
    watched = ["templates_admin.admin", "api.endpoints", "celery"]
    assert imported_by("runserver", watched, then="emailops.urls") == ",".join(watched)
