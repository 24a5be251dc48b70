"""The typed settings (emailops/config.py): every product knob is read there, checked there, and
seen by the next container when a test changes it; no module reads one from django.conf."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from emailops import container
from emailops.config import Config, check_settings
from emailops.config_values import https_mode, strong_secret_key

ROOT = Path(__file__).resolve().parents[1]

# (setting, value set, how the config shows it): one knob of each section moved in issue 22.
MOVED = [
    ("OPS_SCAN_MAX_ITEMS", 7, lambda c: c.ops.scan_max_items),
    ("OPS_DASHBOARD_DAYS", 3, lambda c: c.ops.dashboard_days),
    ("AUDIT_RETENTION_DAYS", 30, lambda c: c.ops.audit_retention_days),
    ("REPUTATION_MIN_VOLUME", 4, lambda c: c.reputation.min_volume),
    ("REPUTATION_ACT_BOUNCE_PERCENT", 3.5, lambda c: c.reputation.act_bounce_percent),
    ("ALERT_WEBHOOK_URL", "http://hook.example", lambda c: c.reputation.alert_webhook_url),
    ("API_MAX_RECIPIENTS", 5, lambda c: c.api.max_recipients),
    ("CONSUMER_CONCURRENCY", 3, lambda c: c.sending.consumer_concurrency),
    (
        "CONSUMER_METRICS_PORT",
        9109,
        lambda c: c.sending.consumer_metrics_port,
    ),  # fixed, still a setting
    ("TEMPLATE_CHECK_CLIENTS", ["outlook.windows"], lambda c: c.console.template_check_clients),
    ("SPAMD_ADDRESS", "spamd.internal:783", lambda c: c.console.spamd_address),
    ("SES_EVENTS_CONCURRENCY", 20, lambda c: c.events.concurrency),
    ("PREFERENCES_TABLE", "prefs-2", lambda c: c.aws.preferences_table),
    ("PREFERENCES_CACHE_SECONDS", 30, lambda c: c.sending.preferences_cache_seconds),
    ("PUBLIC_BASE_URL", "https://email.example.org/", lambda c: c.preferences.public_base_url),
    ("JOURNAL_SENSITIVE_KEYS", [" Token ", "", "PIN"], lambda c: c.console.sensitive_keys),
    (
        "TEMPLATE_VARIABLES_PATH",
        Path("/tmp/vars.json"),
        lambda c: c.console.template_variables_path,
    ),
]
SHOWN = {
    "TEMPLATE_CHECK_CLIENTS": ("outlook.windows",),
    "JOURNAL_SENSITIVE_KEYS": ("token", "pin"),
    "PUBLIC_BASE_URL": "https://email.example.org",  # without its trailing slash
}


@pytest.mark.parametrize(("name", "value", "shown"), MOVED, ids=[m[0] for m in MOVED])
def test_a_changed_setting_reaches_its_section(settings, name, value, shown):
    before = shown(container.current().config)
    setattr(settings, name, value)
    assert shown(container.current().config) == SHOWN.get(name, value) != before


def test_the_beat_schedule_follows_the_ops_section(settings):
    from celery import Celery

    from emailops.celery import REPUTATION_CHECK_SECONDS, _beat_schedule

    settings.OPS_DLQ_CHECK_SECONDS = 7
    settings.OPS_TEMPLATE_CHECK_HOUR = 5
    app = Celery("config-test")
    _beat_schedule(app)
    schedule = app.conf.beat_schedule
    assert schedule["dead-letter-depth"]["schedule"] == 7.0
    assert schedule["daily-template-check"]["schedule"].hour == {5}
    assert schedule["reputation"]["schedule"] == REPUTATION_CHECK_SECONDS == 300.0


def test_every_field_reads_a_declared_variable_or_fixed_value():
    """A field's setting is its section's PREFIX and its name, or the one it names: a renamed
    field or variable fails here rather than at a process's start-up."""
    from dataclasses import fields

    from emailops import config, settings_catalog

    declared = {s.setting for s in settings_catalog.SETTINGS}
    declared |= {f.attr or f.name for f in settings_catalog.FIXED}
    read = [
        config.setting_name(section, item)
        for section in config.Config.SECTIONS
        for item in fields(section)
    ]
    # Django settings finished in emailops/settings.py from a declared one or from DEBUG.
    finished = {"WEBHOOK_ALLOW_LOOPBACK"}
    missing = [n for n in read if n and n not in declared | finished]
    assert missing == [] and len(read) > 50


@pytest.mark.parametrize("hour", [-1, 24])
def test_an_hour_that_is_not_one_is_refused(settings, hour):
    settings.OPS_TEMPLATE_CHECK_HOUR = hour
    with pytest.raises(ImproperlyConfigured, match="OPS_TEMPLATE_CHECK_HOUR must be an hour"):
        Config.from_settings()


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("PUBLIC_BASE_URL", "email.example.org", "PUBLIC_BASE_URL must be"),
        ("PUBLIC_BASE_URL", "javascript://x", "PUBLIC_BASE_URL must be"),
        ("PUBLIC_BASE_URL", "https://x.test/\r\nBcc: y", "PUBLIC_BASE_URL must be"),
        ("PREFERENCES_CACHE_SECONDS", -1, "PREFERENCES_CACHE_SECONDS must be 0"),
    ],
)
def test_a_malformed_preferences_setting_is_refused(settings, name, value, words):
    setattr(settings, name, value)
    with pytest.raises(ImproperlyConfigured, match=words):
        Config.from_settings()


def test_the_system_check_names_the_malformed_variable(settings):
    assert check_settings() == []
    settings.REPUTATION_SLOW_SHARE = 1.5
    [error] = check_settings()
    assert error.id == "emailops.E001" and "REPUTATION_SLOW_SHARE" in error.msg


def test_djangos_own_settings_are_checked_here_too():
    with pytest.raises(ImproperlyConfigured, match="DJANGO_HTTPS must be proxy"):
        https_mode("true")
    assert [https_mode(v) for v in ("proxy", " ON ", "off")] == ["proxy", "on", "off"]
    with pytest.raises(ImproperlyConfigured, match="DJANGO_SECRET_KEY must be set"):
        strong_secret_key("short", debug=False)
    assert strong_secret_key("", debug=True) == "insecure-dev-key-change-me"


# Django's own settings (and the project's plumbing) may be read from django.conf; a product
# knob is read through container.current().config, where it was checked.
DJANGOS_OWN = {
    "AUTH_USER_MODEL",
    "BASE_DIR",
    "CELERY_BROKER_URL",
    "DEBUG",
    "SECRET_KEY",  # and its fallbacks: the unsubscribe tokens' and the queue state seal's keys
    "SECRET_KEY_FALLBACKS",
    "TRUSTED_PROXY_COUNT",  # the DJANGO_ security settings, read by the middleware
    # django-axes' own settings: the login throttle reads them as axes itself does.
    "AXES_COOLOFF_TIME",
    "AXES_LOCKOUT_TEMPLATE",
    "AXES_USERNAME_FORM_FIELD",
}
OWN_FILES = {"emailops/settings.py", "emailops/config.py"}


def direct_reads(root: Path = ROOT) -> list[tuple[str, str]]:
    found = []
    for package in ("emailops", "templates_admin", "api", "worker", "preferences"):
        for path in sorted((root / package).rglob("*.py")):
            where = path.relative_to(root).as_posix()
            if where in OWN_FILES or "/migrations/" in where:
                continue
            for name in re.findall(r"\bsettings\.([A-Z][A-Z0-9_]+)", path.read_text()):
                if name not in DJANGOS_OWN:
                    found.append((where, name))
    return found


def test_no_module_reads_a_product_setting_from_django_conf():
    assert direct_reads() == []


def test_the_rule_catches_a_direct_read(tmp_path):
    (tmp_path / "emailops").mkdir()
    (tmp_path / "emailops" / "x.py").write_text("n = settings.OPS_SCAN_MAX_ITEMS\n")
    assert direct_reads(tmp_path) == [("emailops/x.py", "OPS_SCAN_MAX_ITEMS")]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("EMAIL_SENDER", "Pennsieve\x0bBcc: evil@evil.test <support@pennsieve.test>"),
        ("EMAIL_SENDER", "Penn\x00sieve <support@pennsieve.test>"),
        ("EMAIL_REPLY_TO", "support@pennsieve.test\x0c"),
    ],
)
def test_a_control_character_in_the_sender_stops_start_up(settings, name, value):
    """The From name goes into every email's header as written: refused before anything is sent."""
    setattr(settings, name, value)
    with pytest.raises(ImproperlyConfigured, match=rf"^{name}: control character U\+00"):
        Config.from_settings()


def test_the_tombstone_set_follows_the_send_rate_key_unless_a_test_names_its_own(settings):
    settings.SUPPRESSION_INDEX_REDIS_KEY = None  # the fixed value: derived
    settings.SES_RATE_REDIS_KEY = "acct-1:ses-rate"
    assert (
        container.current().config.sending.suppression_index_prefix == "acct-1:ses-rate:suppressed"
    )
    settings.SUPPRESSION_INDEX_REDIS_KEY = ""
    assert container.current().config.sending.suppression_index_prefix == ""


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("TEMPLATE_CHECK_CLIENTS", ["outlook"], "is not family.platform"),
        ("SPAMD_ADDRESS", "spamd", "must be host:port"),
        ("SPAMD_ADDRESS", "spamd:99999", "must be host:port"),
    ],
)
def test_the_gate_settings_refuse_a_malformed_value(settings, name, value, says):
    setattr(settings, name, value)
    with pytest.raises(ImproperlyConfigured, match=says):
        Config.from_settings()
