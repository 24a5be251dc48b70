"""The template-variables manifest ({messageId: [variable names]}) and what the preview makes of it:
sample contexts to start from and the report comparing manifest, context and template."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from emailops import container

logger = logging.getLogger(__name__)

# Context keys the consumer itself interprets; they are never "given but unused".
CONSUMER_KEYS = frozenset({"organizationId", "subject"})

# A few name-based guesses so a first preview reads like a real email; anything else gets a label.
# Checked in order against the lowercased name: (fragment, must end with it, sample).
_SAMPLES: tuple[tuple[str, bool, str], ...] = (
    ("email", False, "someone@example.com"),
    ("date", True, "2024-05-01"),
    ("url", False, "https://app.pennsieve.io"),
    ("host", False, "https://app.pennsieve.io"),
    ("link", False, "https://app.pennsieve.io"),
    ("nodeid", True, "N:dataset:c0ffee00-1234-4abc-9def-000000000001"),
    ("id", True, "1234"),
)


def template_manifest() -> dict[str, list[str]]:
    """The manifest at TEMPLATE_VARIABLES_PATH; empty (and logged) if unreadable."""
    path = container.current().config.console.template_variables_path
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        logger.warning("template manifest unreadable path=%s error=%s", path, exc)
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): [str(v) for v in vs] for k, vs in data.items() if isinstance(vs, list)}


def sample_value(name: str) -> str:
    lowered = name.lower()
    for fragment, at_end, value in _SAMPLES:
        if lowered.endswith(fragment) if at_end else fragment in lowered:
            return value
    return f"Sample {name}"


def sample_context(names: Iterable[str]) -> dict[str, Any]:
    return {name: sample_value(name) for name in sorted(names)}


@dataclass(frozen=True)
class VariableReport:
    in_manifest: bool  # False: the manifest has no entry for this messageId
    expected_missing: tuple[str, ...]  # the manifest expects them, the context lacks them
    unused: tuple[str, ...]  # the context gives them, no template or subject reads them
    unknown: tuple[str, ...]  # a template or subject reads them, the manifest does not list them
    rendered_empty: tuple[str, ...]  # read while rendering but absent from the context

    @property
    def is_clean(self) -> bool:
        return not (self.expected_missing or self.unused or self.unknown or self.rendered_empty)


def variable_report(
    *,
    expected: Iterable[str] | None,
    given: Iterable[str],
    used: Iterable[str],
    rendered_empty: Iterable[str] = (),
) -> VariableReport:
    given_set, used_set = set(given) - CONSUMER_KEYS, set(used)
    expected_set = set(expected) if expected is not None else None
    return VariableReport(
        in_manifest=expected_set is not None,
        expected_missing=tuple(sorted((expected_set or set()) - given_set)),
        unused=tuple(sorted(given_set - used_set)),
        unknown=()
        if expected_set is None
        else tuple(sorted(used_set - expected_set - CONSUMER_KEYS)),
        rendered_empty=tuple(sorted(set(rendered_empty) - given_set)),
    )
