"""Publish gate v2: the rules on a render that say whether the email will look right and reach
people, beside the template check's own (``emailops.core.template_check``): email-client support
(``client-support``, caniemail's data) and accessibility (``lang``, ``title``, ``img-alt``,
``link-text``, ``heading-order``, ``layout-table``, ``contrast``), and the spam score
(``spam-score``) where a scorer is given. Rule ids are stable (docs/templates.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from lxml import etree

from emailops.core.template_a11y import accessibility_findings
from emailops.core.template_dark import dark_mode_findings
from emailops.core.template_dom import parse_document
from emailops.core.template_findings import Finding
from emailops.core.template_source import authored_html, directives
from emailops.core.template_spam import SpamScorer, full_message, spam_findings
from emailops.core.template_support import DEFAULT_CLIENTS, client_support_findings

__all__ = ["RULES", "GateOptions", "apply_off", "gate_findings", "spam_score_findings"]

RULES = (
    "client-support",
    "img-alt",
    "contrast",
    "link-text",
    "lang",
    "title",
    "heading-order",
    "layout-table",
    "dark-mode",
    "spam-score",
    "size",
    "mjml",
)


@dataclass(frozen=True)
class GateOptions:
    """What the gate runs with: the clients that count for ``client-support`` (caniemail's
    ``family.platform``) and, for ``spam-score``, a scorer of the full message (None: not
    scored)."""

    clients: tuple[str, ...] = DEFAULT_CLIENTS
    spam: SpamScorer | None = None
    sender: str = "Sender <sender@example.com>"  # the From the scored message carries


def _line_mapper(html: str, source: str) -> Callable[[etree._Element], int | None]:
    """The source line of a rendered element: the same line when the render kept the source's
    lines; else the line of an attribute (or tag) the source writes exactly once."""
    same = html.count("\n") == source.count("\n")

    def line_of(element: etree._Element) -> int | None:
        if same or element.sourceline is None:
            return element.sourceline
        candidates = [f'{k}="{v}"' for k, v in element.attrib.items() if v] + [f"<{element.tag}"]
        for candidate in candidates:
            if source.count(candidate) == 1:
                return source.count("\n", 0, source.index(candidate)) + 1
        return None

    return line_of


def gate_findings(
    *,
    html: str,
    source: str,
    key: str,
    organization: str | None,
    options: GateOptions,
    written: str | None = None,
) -> list[Finding]:
    """The gate's findings on one render ``html`` of ``source``; ``written``: the MJML source
    ``source`` was compiled from, if it was."""
    doc = parse_document(html)
    line_of = _line_mapper(html, written or source)
    found = accessibility_findings(doc, key=key, organization=organization, line_of=line_of)
    found += dark_mode_findings(doc, key=key, organization=organization, line_of=line_of)
    if written is not None:
        # MJML's output carries its own fallbacks for each client (conditional comments,
        # @media for the rest): what is looked up is what the author wrote inside it.
        supported, same = parse_document(authored_html(written)), True
    else:
        supported, same = doc, html.count("\n") == source.count("\n")
    found += client_support_findings(
        supported,
        key=key,
        organization=organization,
        clients=options.clients,
        line_of=lambda line, _: line if same else None,
    )
    return found


def apply_off(findings: Iterable[Finding], source: str) -> list[Finding]:
    """``findings`` less the warnings and notes of the rules the template turns off
    (``<!-- emailops: off=contrast -->``); errors always stay."""
    off = directives(source).off
    return [f for f in findings if f.is_error or f.rule not in off]


def spam_score_findings(
    *,
    subject: str,
    html: str,
    text: str,
    source: str,
    key: str,
    organization: str | None,
    options: GateOptions,
) -> list[Finding]:
    """The full message scored by ``options.spam`` (nothing without a scorer)."""
    if options.spam is None:
        return []
    message = full_message(subject=subject, html=html, text=text, sender=options.sender)
    threshold = directives(source).spam_threshold
    return spam_findings(
        options.spam.score(message), key=key, organization=organization, threshold=threshold
    )
