"""The template-variables manifest ({messageId: [variable names]}) and what the preview makes of it:
sample contexts to start from and the report comparing manifest, context and template."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from emailops.container import Container

logger = logging.getLogger(__name__)

# Context keys the consumer itself interprets; they are never "given but unused".
# unsubscribeUrl: the /u/<token> link the consumer adds to categorised mail (docs/preferences.md).
CONSUMER_KEYS = frozenset({"organizationId", "subject", "unsubscribeUrl"})

# A few name-based guesses so a first preview reads like a real email; anything else gets a label.
# Checked in order against the lowercased name: (fragment, must end with it, sample). A host is a
# bare name, as templates write "https://{{.host}}/…"; a URL is a whole one, scheme included.
_SAMPLES: tuple[tuple[str, bool, str], ...] = (
    ("email", False, "someone@example.com"),
    ("date", True, "2024-05-01"),
    ("host", True, "app.pennsieve.io"),
    ("url", False, "https://app.pennsieve.io"),
    ("link", False, "https://app.pennsieve.io/sample"),
    ("id", True, "1234"),
)
_HOSTS = {"discover": "discover.pennsieve.io"}  # discoverHost: the host of another app
_NODE_ID = re.compile(r"(?i)^(?P<kind>.*?)nodeid$")


def template_manifest(*, adapters: Container) -> dict[str, list[str]]:
    """The manifest at TEMPLATE_VARIABLES_PATH; empty (and logged) if unreadable."""
    path = adapters.config.console.template_variables_path
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        logger.warning("template manifest unreadable path=%s error=%s", path, exc)
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): [str(v) for v in vs] for k, vs in data.items() if isinstance(vs, list)}


def sample_value(name: str) -> str:
    """A plausible value for the variable ``name``: a host for ``host``/``discoverHost``, a full
    URL for ``AppURL``, a node id of the right kind for ``organizationNodeId``..."""
    lowered = name.lower()
    node = _NODE_ID.match(name)
    if node:
        kind = re.findall(r"[A-Z]?[a-z]+", node["kind"])
        return f"N:{(kind[-1] if kind else 'dataset').lower()}:c0ffee00-1234-4abc-9def-000000000001"
    if lowered.endswith("host") and lowered[:-4] in _HOSTS:
        return _HOSTS[lowered[:-4]]
    for fragment, at_end, value in _SAMPLES:
        if lowered.endswith(fragment) if at_end else fragment in lowered:
            return value
    return f"Sample {name}"


# A variable a template writes right after a scheme ("https://{{ AppURL }}/…") holds a host there,
# whatever its name says: its sample must not bring a scheme of its own.
_AFTER_SCHEME = re.compile(r"://\{\{-?\s*\.?(?P<name>\w+)\s*-?\}\}")
_SAMPLE_HOST = "app.pennsieve.io"


def hosts_in(sources: Iterable[str]) -> set[str]:
    """The variables the templates ``sources`` write where a host goes (after "://")."""
    return {match["name"] for source in sources for match in _AFTER_SCHEME.finditer(source)}


def _as_host(value: str) -> str:
    if "://" in value:
        return value.split("://", 1)[1].split("/", 1)[0]
    return value if "." in value and " " not in value else _SAMPLE_HOST


def sample_context(names: Iterable[str], *, sources: Iterable[str] = ()) -> dict[str, Any]:
    """A sample value for each of ``names``, fitted to how the templates ``sources`` use them
    (a host after "https://", never a second scheme)."""
    hosts = hosts_in(sources)
    return {
        name: _as_host(sample_value(name)) if name in hosts else sample_value(name)
        for name in sorted(names)
    }


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
