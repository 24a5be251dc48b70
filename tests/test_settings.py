"""Production is the default profile: it needs a strong secret key and turns HTTPS protections on;
DJANGO_DEBUG=true (the local stack, the tests) is the explicit way out. Settings are read once per
process, so each profile is checked in a fresh one."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STRONG_KEY = secrets.token_urlsafe(64)
SHOWN = [
    "DEBUG",
    "SECURE_SSL_REDIRECT",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
    "SECURE_PROXY_SSL_HEADER",
    "TRUSTED_PROXY_COUNT",
]


def run(*args: str, **env: str) -> subprocess.CompletedProcess:
    """A fresh process with only these variables (none of the test run's own, e.g. DJANGO_DEBUG)."""
    clean = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "DJANGO_SETTINGS_MODULE": "emailops.settings",
    }
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def settings_of(**env: str) -> dict:
    script = (
        "import json; from django.conf import settings as s; "
        f"print(json.dumps({{n: getattr(s, n) for n in {SHOWN!r}}}))"
    )
    result = run("-c", script, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize(
    "key",
    [
        "",
        "insecure-dev-key-change-me",
        "short-but-random-Zq81",
        "a" * 60,
        "django-insecure-" + STRONG_KEY,
    ],
    ids=["unset", "dev-default", "short", "one-character", "django-insecure-prefix"],
)
def test_production_refuses_to_start_without_a_strong_key(key):
    result = run("manage.py", "check", DJANGO_SECRET_KEY=key)
    assert result.returncode != 0
    # One line saying what to set, not a traceback (tests/test_manage_environment.py)
    assert "DJANGO_SECRET_KEY must be set to a strong secret" in result.stderr
    assert "Traceback" not in result.stderr
    if key:
        assert key not in result.stderr  # the message never echoes the secret


def test_production_turns_https_protections_on():
    assert settings_of(DJANGO_SECRET_KEY=STRONG_KEY) == {
        "DEBUG": False,
        "SECURE_SSL_REDIRECT": True,
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_HSTS_SECONDS": 31_536_000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": True,
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
        # X-Forwarded-For is trusted only when said so (DJANGO_TRUSTED_PROXY_COUNT=1 behind the
        # ALB): a client reaching the app directly could otherwise forge its address.
        "TRUSTED_PROXY_COUNT": 0,
    }


def test_one_variable_sets_every_https_protection():
    """DJANGO_HTTPS replaced the seven DJANGO_SECURE_*/cookie switches: on trusts no forwarded
    header, off (docker/compose.yml's plain http on localhost) turns every protection off."""
    on = settings_of(
        DJANGO_SECRET_KEY=STRONG_KEY, DJANGO_HTTPS="on", DJANGO_TRUSTED_PROXY_COUNT="1"
    )
    assert on["SECURE_PROXY_SSL_HEADER"] is None
    assert (
        on["SECURE_SSL_REDIRECT"]
        is on["SESSION_COOKIE_SECURE"]
        is on["SECURE_HSTS_PRELOAD"]
        is True
    )
    assert on["TRUSTED_PROXY_COUNT"] == 1
    off = settings_of(DJANGO_SECRET_KEY=STRONG_KEY, DJANGO_HTTPS="off")
    assert off["DEBUG"] is False and not any(off[name] for name in SHOWN[1:])
    assert settings_of(DJANGO_DEBUG="true", DJANGO_HTTPS="proxy")["SECURE_SSL_REDIRECT"] is True


def test_a_malformed_https_mode_stops_start_up():
    result = run("manage.py", "check", DJANGO_SECRET_KEY=STRONG_KEY, DJANGO_HTTPS="true")
    assert result.returncode != 0
    assert "DJANGO_HTTPS must be proxy" in result.stderr and "Traceback" not in result.stderr


def test_a_retired_variable_still_set_is_named_at_start_up():
    """An operator's old variable is not silently ignored: one warning line names it and what
    replaced it; none when nothing retired is set."""
    result = run(
        "-c",
        "import django; django.setup()",
        DJANGO_DEBUG="true",
        DJANGO_SECURE_SSL_REDIRECT="false",
        STATS_FLUSH_SECONDS="30",
    )
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "settings.variable_retired" in line]
    assert len(lines) == 2, result.stderr
    assert "level=warning" in lines[0] and "variable=DJANGO_SECURE_SSL_REDIRECT" in lines[0]
    assert "DJANGO_HTTPS" in lines[0]
    assert "variable=STATS_FLUSH_SECONDS" in lines[1] and "fixed" in lines[1]
    quiet = run("-c", "import django; django.setup()", DJANGO_DEBUG="true")
    assert "variable_retired" not in quiet.stderr


def test_debug_profile_runs_on_the_dev_key_over_plain_http():
    shown = settings_of(DJANGO_DEBUG="true")
    assert shown["DEBUG"] is True
    assert not any(shown[name] for name in SHOWN[1:])


def test_check_deploy_passes_under_production_settings():
    result = run(
        "manage.py",
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DJANGO_SECRET_KEY=STRONG_KEY,
        DJANGO_ALLOWED_HOSTS="console.example.org",
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_password_validators_are_on(settings):
    from django.contrib.auth.password_validation import validate_password
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError):
        validate_password("password")
    validate_password(secrets.token_urlsafe(16))


def test_the_web_process_refuses_a_malformed_setting_at_start_up():
    """emailops.wsgi (what gunicorn loads) builds the container, whose Config checks every
    section: a bad value stops it before its first request, naming the variable."""
    result = run("-c", "import emailops.wsgi", DJANGO_DEBUG="true", SES_MAX_SEND_RATE="fast")
    assert result.returncode != 0
    assert "ImproperlyConfigured: SES_MAX_SEND_RATE must be emails per second" in result.stderr
    assert run("-c", "import emailops.wsgi", DJANGO_DEBUG="true").returncode == 0


def test_manage_py_check_refuses_a_malformed_setting():
    """The sections are a system check too: ``manage.py check`` (and migrate, bootstrap_aws…)
    refuses the value, naming it. The consumers skip system checks for a fast start and refuse it
    when they build their container; the web process at import (above)."""
    result = run("manage.py", "check", DJANGO_DEBUG="true", RATE_SAFEGUARD_OVER_CAP="drop")
    assert result.returncode != 0
    # Raised by the system check, or as the URLs import the Celery app: the same words.
    assert "RATE_SAFEGUARD_OVER_CAP must be hold or log-only" in result.stderr
    result = run("manage.py", "check", DJANGO_DEBUG="true", PUBLIC_BASE_URL="emails.example.org")
    assert result.returncode != 0
    assert "PUBLIC_BASE_URL must be" in result.stderr


def test_celery_refuses_a_malformed_setting_as_it_loads_the_app():
    """``celery -A emailops worker|beat`` imports emailops.celery first: a bad value stops it
    there rather than in a signal handler whose error Celery only logs."""
    result = run("-c", "import emailops.celery", DJANGO_DEBUG="true", RATE_SAFEGUARD_OVER_CAP="x")
    assert result.returncode != 0
    assert "ImproperlyConfigured: RATE_SAFEGUARD_OVER_CAP must be hold or log-only" in result.stderr
    assert run("-c", "import emailops.celery", DJANGO_DEBUG="true").returncode == 0


# Two processes, one SQLite file, each running read-then-write transactions (as update_or_create
# does): a deferred transaction that must upgrade its read lock to a write lock gets "database is
# locked" at once, without waiting its turn (SQLite's deadlock avoidance). The devstack's workers
# hit this (a webhook fan-out lost its deliveries' tasks).
_CONTENDER = """
import sys
import django
django.setup()
from django.db import connection, transaction
with connection.cursor() as cursor:
    cursor.execute("CREATE TABLE IF NOT EXISTS seen (name TEXT PRIMARY KEY, n INTEGER)")
    cursor.execute("INSERT OR IGNORE INTO seen VALUES ('worker', 0)")
for _ in range(int(sys.argv[1])):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT n FROM seen WHERE name = 'worker'")
        (n,) = cursor.fetchone()
        cursor.execute("UPDATE seen SET n = %s WHERE name = 'worker'", [n + 1])
"""


def test_sqlite_writers_in_several_processes_wait_their_turn(tmp_path):
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    env["DJANGO_SETTINGS_MODULE"] = "emailops.settings"
    command = [sys.executable, "-c", _CONTENDER, "3000"]
    first = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)  # the table
    assert first.returncode == 0, first.stderr
    contenders = [
        subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    errors = [process.communicate(timeout=120)[1] for process in contenders]
    assert [process.returncode for process in contenders] == [0, 0, 0], errors
    import sqlite3

    with sqlite3.connect(tmp_path / "db.sqlite3") as database:
        (n,) = database.execute("SELECT n FROM seen").fetchone()
    assert n == 3000 + 3 * 3000  # no update lost either
