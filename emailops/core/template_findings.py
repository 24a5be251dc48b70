"""What the template check (``emailops.core.template_check``) reports: a finding, its severity,
and the file and organization it is about."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["ERROR", "NOTE", "WARNING", "Finding", "dedupe", "organization_of_key"]

ERROR = "error"
WARNING = "warning"
NOTE = "note"  # listed, never blocks nor needs confirming (e.g. partial client support)

# The stable rule id a finding's code belongs to (docs/templates.md lists them); a code not
# named here is its own rule.
_RULES = {
    "compile": "compile",
    "img-no-alt": "img-alt",
    "mjml-compile": "mjml",
    "mjml-element": "mjml",
}

_CUSTOM_KEY = re.compile(r"^custom/O(\d+)/[^/]+$")


@dataclass(frozen=True)
class Finding:
    severity: str  # "error" | "warning"
    code: str  # a stable name: compile, render, size, javascript-link, http-link, ...
    message: str
    file: str  # the object key (e.g. "custom/O367/welcome.html")
    organization: str | None
    line: int | None = None
    element: str = ""  # a short excerpt of the element (or CSS) the finding is about
    fix: str = ""  # how to fix it

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR

    @property
    def rule(self) -> str:
        """The stable rule id (``img-alt``, ``contrast``, ``client-support``, ...): what a
        pipeline matches on and what ``<!-- emailops-check: off=RULE -->`` turns off."""
        return _RULES.get(self.code, self.code)


def organization_of_key(key: str) -> str | None:
    """ "367" for ``custom/O367/file``; None for the default file."""
    match = _CUSTOM_KEY.match(key)
    return match[1] if match else None


def dedupe(findings: Iterable[Finding]) -> list[Finding]:
    """Each finding once (several contexts often find the same thing), errors first."""
    unique = list(dict.fromkeys(findings))
    order = {ERROR: 0, WARNING: 1, NOTE: 2}
    return sorted(unique, key=lambda f: (order.get(f.severity, 3), f.file, f.line or 0))
