"""A management command run outside the stack's environment, or missing a setting it needs, says
so in one line that leads with what to do (what to source or set), instead of a traceback ending
in ImproperlyConfigured."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.db import OperationalError

import manage
from emailops import container

ROOT = Path(__file__).resolve().parents[1]


def _manage(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_email_log_without_the_environment_says_what_to_do_in_one_short_line(tmp_path):
    result = _manage(tmp_path, "email_log", "recipient", "a@example.com")  # no setting at all

    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("manage.py email_log: run `source .devstack.env` first")
    assert "DJANGO_SECRET_KEY" in lines[0]
    assert len(lines[0]) < 200, lines[0]


def test_consume_emails_on_a_development_machine_without_aws_settings_names_the_setting(
    tmp_path,
):
    db = f"sqlite:///{tmp_path}/console.sqlite3"
    result = _manage(tmp_path, "consume_emails", DJANGO_DEBUG="true", DATABASE_URL=db)

    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines == [
        "manage.py consume_emails: run `source .devstack.env` first (`make run` writes it), or "
        "fix the setting (docs/configuration.md): EMAIL_SENDER is not set (nor PENNSIEVE_DOMAIN "
        "to derive it from)."
    ]


@pytest.mark.django_db
def test_a_setting_a_command_finds_missing_as_it_runs_ends_it_in_one_line(
    settings, capsys, monkeypatch
):
    import django

    # Django is set up already: again would configure logging on pytest's captured stderr
    monkeypatch.setattr(django, "setup", lambda *args, **kwargs: None)
    settings.EMAIL_SERVICE_QUEUE_URL = ""
    container.reset()

    with pytest.raises(SystemExit) as stopped:
        manage.run(["manage.py", "dlq", "list"])

    assert stopped.value.code == (
        "manage.py dlq: run `source .devstack.env` first (`make run` writes it), or fix the "
        "setting (docs/configuration.md): EMAIL_SERVICE_QUEUE_URL is not set."
    )
    assert "Traceback" not in capsys.readouterr().err


def test_a_database_not_made_yet_says_to_migrate():
    said = manage.refusal(["email_log"], OperationalError("no such table: auth_user"))

    assert said.startswith("manage.py email_log: run `source .devstack.env` first")
    assert "run `manage.py migrate`" in said
    assert said.endswith("(the console's database: no such table: auth_user).")


def test_a_malformed_value_keeps_its_example():
    from django.core.exceptions import ImproperlyConfigured

    said = manage.refusal(
        ["consume_emails"],
        ImproperlyConfigured(
            "SES_MAX_SEND_RATE must be emails per second (e.g. 14 or 0.5), 0 for no limit"
        ),
    )
    assert said.endswith(
        "fix the setting (docs/configuration.md): SES_MAX_SEND_RATE must be emails per second "
        "(e.g. 14 or 0.5), 0 for no limit."
    )
