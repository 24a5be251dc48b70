"""docs/configuration.md, .env.example and emailops/settings.py name the same variables, with the
same defaults: a setting added to one and forgotten in another fails here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NAME = r"[A-Z][A-Z0-9_]*"


def env_example(text: str) -> dict[str, str]:
    """``NAME=value`` lines, and ``# NAME=value`` ones: settings whose default depends on
    DJANGO_DEBUG are shown commented out with their production value."""
    found = {}
    for line in text.splitlines():
        if match := re.fullmatch(rf"(?:# ?)?({NAME})=(.*)", line.strip()):
            found[match[1]] = match[2]
    return found


def docs_table(text: str) -> dict[str, str]:
    """Rows ``| `NAME` | default | meaning |``: the default is the cell's first `code` span, or
    empty when the cell starts with a dash (—)."""
    found = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not (match := re.fullmatch(rf"`({NAME})`", cells[0])):
            continue
        assert match[1] not in found, f"{match[1]} has two rows in docs/configuration.md"
        default = cells[1]
        if default.startswith("—"):
            found[match[1]] = ""
        elif code := re.match(r"`([^`]*)`", default):
            found[match[1]] = code[1]
        else:
            raise AssertionError(f"{match[1]}: default cell {default!r} is neither `x` nor —")
    return found


def settings_reads(source: str) -> dict[str, str | None]:
    """Every ``env(...)``/``env.xxx("NAME", default=...)`` in settings.py: name → the default as
    .env.example would write it, or None when it is computed (a path, a DEBUG-dependent value)."""
    found: dict[str, str | None] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        is_env = (isinstance(func, ast.Name) and func.id == "env") or (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "env"
        )
        first = node.args[0]
        if not (is_env and isinstance(first, ast.Constant) and isinstance(first.value, str)):
            continue
        default = next((k.value for k in node.keywords if k.arg == "default"), None)
        try:
            value = ast.literal_eval(default) if default is not None else None
        except ValueError:
            value = None  # computed
        if isinstance(value, bool):
            value = str(value).lower()
        elif isinstance(value, list):
            value = ",".join(value)
        elif value is not None:
            value = str(value)
        found[first.value] = value
    return found


@pytest.fixture(scope="module")
def example() -> dict[str, str]:
    return env_example((ROOT / ".env.example").read_text())


@pytest.fixture(scope="module")
def documented() -> dict[str, str]:
    return docs_table((ROOT / "docs" / "configuration.md").read_text())


@pytest.fixture(scope="module")
def read() -> dict[str, str | None]:
    return settings_reads((ROOT / "emailops" / "settings.py").read_text())


def test_every_variable_of_env_example_is_documented_with_its_default(example, documented):
    assert sorted(set(example) - set(documented)) == [], "missing from docs/configuration.md"
    differ = {n: (example[n], documented[n]) for n in example if documented[n] != example[n]}
    assert differ == {}, "(.env.example, docs/configuration.md) defaults differ"


def test_every_documented_variable_is_in_env_example(example, documented):
    assert sorted(set(documented) - set(example)) == [], "missing from .env.example"


def test_every_variable_settings_reads_is_in_both(example, documented, read):
    assert sorted(set(read) - set(example)) == [], "read by settings.py, missing from .env.example"
    assert sorted(set(read) - set(documented)) == [], "read by settings.py, not documented"


def test_literal_defaults_in_settings_match_env_example(example, read):
    differ = {
        name: (default, example[name])
        for name, default in read.items()
        if default is not None and name in example and example[name] != default
    }
    assert differ == {}, "(settings.py, .env.example) defaults differ"


def test_the_parsers_see_the_whole_files(example, documented, read):
    """Guards the guards: a parser that matched nothing would make every check above pass."""
    assert len(example) >= 50 and len(read) >= 50
    assert "SES_EVENTS_VERIFY_SIGNATURES" in example  # a commented-out one
    assert documented["DJANGO_SECURE_HSTS_SECONDS"] == "31536000"
    assert read["JOURNAL_TTL_DAYS"] == "90" and read["DJANGO_SECRET_KEY"] == ""
