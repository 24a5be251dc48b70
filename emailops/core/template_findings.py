"""What the template check (``emailops.core.template_check``) reports: a finding, its severity,
and the file and organization it is about."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["ERROR", "WARNING", "Finding", "dedupe", "organization_of_key"]

ERROR = "error"
WARNING = "warning"

_CUSTOM_KEY = re.compile(r"^custom/O(\d+)/[^/]+$")


@dataclass(frozen=True)
class Finding:
    severity: str  # "error" | "warning"
    code: str  # a stable name: compile, render, size, javascript-link, http-link, ...
    message: str
    file: str  # the object key (e.g. "custom/O367/welcome.html")
    organization: str | None
    line: int | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR


def organization_of_key(key: str) -> str | None:
    """ "367" for ``custom/O367/file``; None for the default file."""
    match = _CUSTOM_KEY.match(key)
    return match[1] if match else None


def dedupe(findings: Iterable[Finding]) -> list[Finding]:
    """Each finding once (several contexts often find the same thing), errors first."""
    unique = list(dict.fromkeys(findings))
    return sorted(unique, key=lambda f: (not f.is_error, f.file, f.line or 0))
