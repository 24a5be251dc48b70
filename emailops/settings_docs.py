"""``.env.example`` and docs/configuration.md's tables, written from emailops/settings_catalog.py.

    python -m emailops.settings_docs          # rewrite both (make settings-docs)
    python -m emailops.settings_docs --check  # exit 1 if either differs (the drift test's check)

Only the part of configuration.md between the two markers is written: the prose around it stays
hand-written.
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

from emailops.settings_catalog import FIXED, GROUPS, RETIRED, Setting

ROOT = Path(__file__).resolve().parent.parent
ENV_EXAMPLE = ROOT / ".env.example"
CONFIGURATION_MD = ROOT / "docs" / "configuration.md"
COMMAND = "python -m emailops.settings_docs"
BEGIN = f"<!-- settings: written by `{COMMAND}` from emailops/settings_catalog.py -->"
END = "<!-- settings: end -->"

_ENV_HEADER = f"""\
# Every variable emailops reads, with its default. Copy to .env (git-ignored) or set in the
# environment; real environment variables win over .env. `manage.py devstack` sets the AWS ones
# for the local moto stack by itself. Written by `{COMMAND}` from
# emailops/settings_catalog.py: edit that, not this file. Meanings: docs/configuration.md.
"""


def _plain(text: str) -> str:
    """Markdown as a comment: links become their text, bold marks go."""
    return re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", text).replace("**", "")


def _comment(text: str) -> list[str]:
    return textwrap.wrap(_plain(text), width=98, initial_indent="# ", subsequent_indent="# ")


def env_example() -> str:
    lines = [_ENV_HEADER.rstrip("\n")]
    for group in GROUPS:
        lines += ["", f"# --- {_plain(group.title)} ---"]
        for setting in group.settings:
            lines += _comment(setting.doc)
            if setting.debug_default is not None:
                # Its default depends on DJANGO_DEBUG: left unset, shown with the production value.
                lines += _comment(
                    f"Default (left unset): {setting.default} unless DJANGO_DEBUG, then "
                    f"{setting.debug_default}."
                )
                lines.append(f"# {setting.name}={setting.default}")
            else:
                lines.append(f"{setting.name}={setting.default}")
    return "\n".join(lines) + "\n"


def _default_cell(setting: Setting) -> str:
    cell = f"`{setting.default}`" if setting.default else "—"
    if setting.debug_default is not None:
        cell += f" unless `DJANGO_DEBUG` (then `{setting.debug_default}`)"
    return f"{cell} ({setting.note})" if setting.note else cell


def _fixed_value(value: object) -> str:
    if isinstance(value, list):
        return ",".join(value)
    if isinstance(value, Path):
        return value.relative_to(Path(__file__).resolve().parent.parent).as_posix()
    return str(value)


def docs_section() -> str:
    lines = [BEGIN]
    for group in GROUPS:
        lines += ["", f"## {group.title}", ""]
        if group.intro:
            lines += [*textwrap.wrap(group.intro, width=100), ""]
        lines += ["| variable | default | meaning |", "| --- | --- | --- |"]
        lines += [f"| `{s.name}` | {_default_cell(s)} | {s.doc} |" for s in group.settings]
    fixed = {f.name: f for f in FIXED}
    lines += [
        "",
        "## Removed variables",
        "",
        "No longer read: each, still set, gets one warning line at start-up",
        "(`event=settings.variable_retired variable=… now=…`). Fixed values are Django settings of",
        "the same name (tests may set them), declared in `emailops/settings_catalog.py` with why.",
        "",
    ]
    for name, why in RETIRED.items():
        if name in fixed:
            why = f"fixed at `{_fixed_value(fixed[name].value)}`: {fixed[name].why}"
        lines.append(f"- `{name}`: {why}")
    return "\n".join([*lines, "", END])


def configuration_md(current: str) -> str:
    """``current`` with the part between the markers rewritten."""
    before, begin, rest = current.partition(BEGIN)
    _, end, after = rest.partition(END)
    if not (begin and end):
        raise SystemExit(f"{CONFIGURATION_MD}: the markers {BEGIN!r} and {END!r} are missing")
    return before + docs_section() + after


def main(argv: list[str]) -> int:
    wanted = {
        ENV_EXAMPLE: env_example(),
        CONFIGURATION_MD: configuration_md(CONFIGURATION_MD.read_text()),
    }
    stale = [path for path, text in wanted.items() if path.read_text() != text]
    if "--check" in argv:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is stale: run {COMMAND}", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(wanted[path])
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
