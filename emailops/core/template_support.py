"""The publish gate's ``client-support`` rule: every CSS property (and the values and at-rules
caniemail tracks apart: ``display:flex``, gradients, ``@media``...), HTML element and attribute a
render uses, looked up in caniemail's data (vendored: emailops/data/caniemail/, MIT, refreshed by
``make caniemail``) for the clients that count.

Unsupported in a client that counts is a warning; partial support (caniemail's "a") a note, with
caniemail's notes. A client is ``family.platform`` as caniemail names them (``outlook.windows``,
``gmail.android``); its newest tested version is the one that counts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from emailops.core.template_dom import Document, excerpt
from emailops.core.template_findings import NOTE, WARNING, Finding

__all__ = [
    "CANIEMAIL_PATH",
    "DEFAULT_CLIENTS",
    "Support",
    "client_support_findings",
    "load_support",
]

CANIEMAIL_PATH = Path(__file__).resolve().parent.parent / "data" / "caniemail" / "caniemail.json"
DEFAULT_CLIENTS = (
    "gmail.desktop-webmail",
    "gmail.ios",
    "gmail.android",
    "outlook.windows",
    "outlook.macos",
    "outlook.outlook-com",
    "apple-mail.macos",
    "apple-mail.ios",
    "yahoo.desktop-webmail",
)
# Attributes caniemail tracks, by the slug that holds them.
_ATTRIBUTES = {
    "lang": "html-lang",
    "dir": "html-dir",
    "align": "html-align",
    "valign": "html-valign",
    "width": "html-width",
    "height": "html-height",
    "background": "html-background",
    "cellpadding": "html-cellpadding",
    "cellspacing": "html-cellspacing",
    "role": "html-role",
    "srcset": "html-srcset",
    "target": "html-target",
    "loading": "html-loading-attribute",
    "aria-label": "html-aria-label",
    "aria-hidden": "html-aria-hidden",
    "aria-describedby": "html-aria-describedby",
    "aria-labelledby": "html-aria-labelledby",
    "aria-live": "html-aria-live",
    "hidden": "html-hidden",
    "required": "html-required",
    "popover": "html-popover",
}
_ELEMENTS = {
    "h1": "html-h1-h6",
    "h2": "html-h1-h6",
    "h3": "html-h1-h6",
    "h4": "html-h1-h6",
    "h5": "html-h1-h6",
    "h6": "html-h1-h6",
    "ul": "html-lists",
    "ol": "html-lists",
    "button": "html-button-submit",
}
_FUNCTIONS = {
    "linear-gradient": "css-linear-gradient",
    "radial-gradient": "css-radial-gradient",
    "conic-gradient": "css-conic-gradient",
    "calc": "css-unit-calc",
    "var": "css-variables",
    "clamp": "css-function-clamp",
    "min": "css-function-min",
    "max": "css-function-max",
    "light-dark": "css-function-light-dark",
}
_FUNCTION = re.compile(r"([a-z-]+)\(")
# What every email has: not a choice a template owner can make differently.
_STRUCTURAL = frozenset({"html-html", "html-head", "html-body", "html-meta", "html-title"})


@dataclass(frozen=True)
class Verdict:
    client: str  # "Outlook Windows"
    status: str  # "n" | "a"
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Support:
    """caniemail's answers, by slug; ``updated``: its last_update_date."""

    features: dict[str, dict]
    names: dict[str, dict[str, str]]
    updated: str

    def verdicts(self, slug: str, clients: Iterable[str]) -> list[Verdict]:
        feature = self.features.get(slug)
        if feature is None:
            return []
        notes_by_num = feature.get("notes_by_num") or {}
        out = []
        for client in clients:
            family, _, platform = client.partition(".")
            versions = feature["stats"].get(family, {}).get(platform)
            if not versions:
                continue
            value = list(versions.values())[-1]  # the newest tested version
            status, *refs = value.split()
            if status not in ("n", "a"):
                continue
            notes = tuple(notes_by_num[r[1:]] for r in refs if r[1:] in notes_by_num)
            name = (
                f"{self.names['family'].get(family, family)} "
                f"{self.names['platform'].get(platform, platform)}"
            )
            out.append(Verdict(name, status, notes))
        return out


@cache
def load_support(path: Path = CANIEMAIL_PATH) -> Support:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return Support(
        {f["slug"]: f for f in data["data"]}, data["nicenames"], data.get("last_update_date", "")
    )


def _css_slugs(name: str, value: str) -> Iterator[str]:
    yield f"css-{name}"
    lowered = value.lower()
    if name == "display":
        for shown in ("flex", "grid", "none"):
            if re.search(rf"\b(inline-)?{shown}\b", lowered):
                yield f"css-display-{shown}"
    for function in _FUNCTION.findall(lowered):
        if function in _FUNCTIONS:
            yield _FUNCTIONS[function]
    if name.startswith("--"):
        yield "css-variables"


def _uses(doc: Document) -> Iterator[tuple[str, str, int | None]]:
    """(slug, excerpt, line) for every use of a feature, in document order."""
    for element in doc.elements():
        tag = element.tag
        slug = _ELEMENTS.get(tag, f"html-{tag}")
        if slug not in _STRUCTURAL:
            yield slug, excerpt(element), element.sourceline
        for attribute in element.attrib:
            if attribute in _ATTRIBUTES:
                yield _ATTRIBUTES[attribute], excerpt(element), element.sourceline
    for declaration in doc.declarations:
        where = (
            excerpt(declaration.element)
            if declaration.element is not None
            else f"{declaration.selector} {{ {declaration.name}: {declaration.value} }}"
        )
        for slug in _css_slugs(declaration.name, declaration.value):
            yield slug, where[:120], declaration.line
        if declaration.important:
            yield "css-important", where[:120], declaration.line
    for name, prelude, line in doc.at_rules:
        yield f"css-at-{name}", f"@{name} {prelude}"[:120], line
        if name == "media" and "prefers-color-scheme" in prelude:
            yield "css-at-media-prefers-color-scheme", f"@{name} {prelude}"[:120], line


def client_support_findings(
    doc: Document,
    *,
    key: str,
    organization: str | None,
    clients: Iterable[str] = DEFAULT_CLIENTS,
    support: Support | None = None,
    line_of: Callable[[int | None, str], int | None] = lambda line, _: line,
) -> list[Finding]:
    """One finding per feature a counted client lacks (a warning) or supports in part (a note),
    at its first use."""
    support = support or load_support()
    clients = tuple(clients)
    found: list[Finding] = []
    seen: set[str] = set()
    for slug, where, line in _uses(doc):
        if slug in seen:
            continue
        seen.add(slug)
        verdicts = support.verdicts(slug, clients)
        if not verdicts:
            continue
        feature = support.features[slug]
        missing = [v.client for v in verdicts if v.status == "n"]
        partial = [v for v in verdicts if v.status == "a"]
        parts = []
        if missing:
            parts.append("not supported in " + ", ".join(missing))
        if partial:
            parts.append(
                "partly in "
                + "; ".join(
                    v.client + (f" ({' '.join(v.notes)})" if v.notes else "") for v in partial
                )
            )
        found.append(
            Finding(
                WARNING if missing else NOTE,
                "client-support",
                f"{feature['title']}: {'; '.join(parts)} (caniemail {feature['url']})",
                key,
                organization,
                line_of(line, where),
                where,
                "use a fallback these clients render (tables for layout, inline styles, "
                "solid colours), or accept it for them",
            )
        )
    return found
