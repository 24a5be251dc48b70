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


def test_each_protection_can_be_set_from_the_environment():
    shown = settings_of(
        DJANGO_SECRET_KEY=STRONG_KEY,
        DJANGO_SECURE_SSL_REDIRECT="false",
        DJANGO_SECURE_HSTS_SECONDS="3600",
        DJANGO_SECURE_HSTS_PRELOAD="false",
        DJANGO_SECURE_PROXY_SSL_HEADER="",
        DJANGO_TRUSTED_PROXY_COUNT="1",
    )
    assert shown["SECURE_SSL_REDIRECT"] is False
    assert shown["SECURE_HSTS_SECONDS"] == 3600
    assert shown["SECURE_HSTS_PRELOAD"] is False
    assert shown["SECURE_PROXY_SSL_HEADER"] is None
    assert shown["TRUSTED_PROXY_COUNT"] == 1
    assert shown["SESSION_COOKIE_SECURE"] is True  # the others keep their production default


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
    result = run("manage.py", "check", DJANGO_DEBUG="true", OPS_TEMPLATE_CHECK_HOUR="24")
    assert result.returncode != 0
    # Raised by the system check, or as the URLs import the Celery app: the same words.
    assert "OPS_TEMPLATE_CHECK_HOUR must be an hour of the day" in result.stderr
    result = run("manage.py", "check", DJANGO_DEBUG="true", REPUTATION_SLOW_SHARE="2")
    assert result.returncode != 0
    assert "REPUTATION_SLOW_SHARE must be a share" in result.stderr


def test_celery_refuses_a_malformed_setting_as_it_loads_the_app():
    """``celery -A emailops worker|beat`` imports emailops.celery first: a bad value stops it
    there rather than in a signal handler whose error Celery only logs."""
    result = run("-c", "import emailops.celery", DJANGO_DEBUG="true", OPS_TEMPLATE_CHECK_HOUR="24")
    assert result.returncode != 0
    assert "ImproperlyConfigured: OPS_TEMPLATE_CHECK_HOUR must be an hour" in result.stderr
    assert run("-c", "import emailops.celery", DJANGO_DEBUG="true").returncode == 0
