"""Each setting is declared once (emailops/settings_catalog.py): .env.example and the tables of
docs/configuration.md are written from it and must not drift, emailops/settings.py reads the
environment only through it, and the list stays short enough for an operator to read."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from emailops import settings_catalog as catalog
from emailops import settings_docs

ROOT = Path(__file__).resolve().parents[1]
SETTINGS_PY = ROOT / "emailops" / "settings.py"


def test_env_example_is_written_from_the_catalog():
    assert (ROOT / ".env.example").read_text() == settings_docs.env_example(), (
        f".env.example drifted from emailops/settings_catalog.py: run {settings_docs.COMMAND}"
    )


def test_the_configuration_tables_are_written_from_the_catalog():
    current = (ROOT / "docs" / "configuration.md").read_text()
    assert current == settings_docs.configuration_md(current), (
        f"docs/configuration.md drifted from emailops/settings_catalog.py: run {settings_docs.COMMAND}"
    )


def test_the_check_command_fails_on_drift(tmp_path, monkeypatch):
    """Guards the guard: a hand edit of either file is found, and the command names the fix."""
    stale = tmp_path / ".env.example"
    stale.write_text(
        settings_docs.env_example().replace("JOURNAL_TTL_DAYS=90", "JOURNAL_TTL_DAYS=9")
    )
    docs = tmp_path / "configuration.md"
    docs.write_text((ROOT / "docs" / "configuration.md").read_text())
    monkeypatch.setattr(settings_docs, "ENV_EXAMPLE", stale)
    monkeypatch.setattr(settings_docs, "CONFIGURATION_MD", docs)
    monkeypatch.setattr(settings_docs, "ROOT", tmp_path)
    assert settings_docs.main(["--check"]) == 1
    assert settings_docs.main([]) == 0 and settings_docs.main(["--check"]) == 0
    assert "JOURNAL_TTL_DAYS=90" in stale.read_text()


def test_the_markers_must_be_there():
    with pytest.raises(SystemExit, match="markers"):
        settings_docs.configuration_md("# Configuration\n")


def test_every_variable_has_one_row_and_one_line():
    section = settings_docs.docs_section()
    rows = re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", section, re.M)
    assert rows == [s.name for s in catalog.SETTINGS]
    assigned = re.findall(r"^(?:# )?([A-Z][A-Z0-9_]*)=", settings_docs.env_example(), re.M)
    assert assigned == rows
    assert "# SES_EVENTS_VERIFY_SIGNATURES=true" in settings_docs.env_example()  # DEBUG-dependent


def test_at_most_60_variables_are_documented():
    """Issue 31: the list is what an operator turns; a knob nobody tunes is a FIXED constant."""
    names = [s.name for s in catalog.SETTINGS]
    assert len(names) == len(set(names)) <= 60
    assert not set(names) & set(catalog.RETIRED), "a retired variable is declared again"


def test_settings_reads_the_environment_only_through_the_catalog():
    """No ``env.str("NAME", default=...)`` of its own: a second declaration would drift."""
    calls = [
        node
        for node in ast.walk(ast.parse(SETTINGS_PY.read_text()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    ]

    def own(call: ast.Call) -> bool:
        if isinstance(call.func.value, ast.Name) and call.func.value.id == "env":
            return True
        if ast.unparse(call.func) not in ("os.environ.get", "os.getenv"):
            return False
        return ast.literal_eval(call.args[0]) not in (*catalog.BY_NAME, "AWS_DEFAULT_REGION")

    assert [ast.unparse(call) for call in calls if own(call)] == []


def test_every_declared_value_is_a_django_setting(settings):
    for setting in catalog.SETTINGS:
        assert hasattr(settings, setting.setting), setting.name
    for fixed in catalog.FIXED:
        assert hasattr(settings, fixed.attr or fixed.name), fixed.name


def test_the_retired_variables_still_set_are_found():
    found = catalog.retired_in({"DJANGO_SECURE_HSTS_SECONDS": "0", "JOURNAL_TABLE": "x"})
    assert found == [("DJANGO_SECURE_HSTS_SECONDS", "replaced by DJANGO_HTTPS (proxy, on or off)")]
    assert all(name in catalog.RETIRED for name in ("STATS_FLUSH_SECONDS", "OPS_DASHBOARD_TOP"))


def test_the_two_waits_fixed_for_the_webhook_settings_are_named_when_still_set():
    """Issue 32 paid for WEBHOOK_RETRY_BASE_SECONDS and WEBHOOK_SECRET_KEYS with these two."""
    found = dict(
        catalog.retired_in({"RETRY_BACKOFF_CAP_SECONDS": "5", "REPUTATION_PAUSE_WAIT_SECONDS": "5"})
    )
    assert set(found) == {"RETRY_BACKOFF_CAP_SECONDS", "REPUTATION_PAUSE_WAIT_SECONDS"}
    assert all(why.startswith("fixed: ") for why in found.values())
    assert {"WEBHOOK_RETRY_BASE_SECONDS", "WEBHOOK_SECRET_KEYS"} <= set(catalog.BY_NAME)
