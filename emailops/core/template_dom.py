"""A rendered email as the publish gate's rules read it: the element tree (lxml, with source
lines) and each element's declared CSS, resolved from its ``style`` attribute and the document's
``<style>`` blocks by the cascade's order (``!important``, specificity, source order).

Only what the rules need: no layout, no ``@media`` (a rule inside one is not applied: its
condition is the client's), inheritance for the properties that inherit (``color``, ``font-*``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import cssselect
import tinycss2
from lxml import etree, html

__all__ = ["Declaration", "Document", "excerpt", "parse_document"]

_INHERITED = frozenset({"color", "font-size", "font-weight", "font-family", "line-height"})
_TRANSLATOR = cssselect.GenericTranslator()
_INLINE = (1, 0, 0, 0)
_HTML_TAG = re.compile(r"<html[\s>]", re.I)  # a style attribute beats every selector


@dataclass(frozen=True)
class Declaration:
    """One ``property: value`` as written: in a ``style`` attribute (``element`` set) or a
    ``<style>`` block (``selector`` set); ``line`` is the rendered document's."""

    name: str
    value: str
    important: bool
    line: int | None
    element: etree._Element | None = None
    selector: str = ""
    at_rule: str = ""  # "media" when inside an @media block


@dataclass
class Document:
    root: etree._Element
    declarations: list[Declaration]  # every declaration written, in document order
    at_rules: list[tuple[str, str, int | None]]  # (name, prelude, line)
    fragment: bool = False  # no <html> written: a body fragment, sent as it is
    _styles: dict[etree._Element, dict[str, str]] = field(default_factory=dict)

    def elements(self) -> Iterator[etree._Element]:
        for element in self.root.iter():
            if isinstance(element.tag, str):
                yield element

    def declared(self, element: etree._Element) -> dict[str, str]:
        """The properties the cascade gives ``element`` itself (nothing inherited)."""
        return self._styles.get(element, {})

    def computed(self, element: etree._Element, name: str) -> str | None:
        """``name``'s value on ``element``, inherited from its ancestors where it inherits."""
        node: etree._Element | None = element
        while node is not None:
            value = self._styles.get(node, {}).get(name)
            if value is not None:
                return value
            if name not in _INHERITED:
                return None
            node = node.getparent()
        return None


def excerpt(element: etree._Element, limit: int = 80) -> str:
    """The element's start tag (attributes shortened), e.g. ``<img src="logo.png">``."""
    attrs = " ".join(
        f'{k}="{v if len(v) <= 40 else v[:37] + "..."}"' for k, v in element.attrib.items()
    )
    tag = f"<{element.tag}{' ' + attrs if attrs else ''}>"
    return tag if len(tag) <= limit else tag[: limit - 4] + "...>"


def _declarations(
    text: str, *, line0: int | None, **where: object
) -> Iterator[tuple[str, str, bool, int | None]]:
    for node in tinycss2.parse_blocks_contents(text, skip_comments=True, skip_whitespace=True):
        if node.type != "declaration":
            continue
        value = tinycss2.serialize(node.value).strip()
        line = None if line0 is None else line0 + node.source_line - 1
        yield node.lower_name, value, node.important, line


def _specificity(selector: str) -> tuple[int, int, int, int] | None:
    try:
        parsed = cssselect.parse(selector)
    except cssselect.SelectorError:
        return None
    return (0, *parsed[0].specificity()) if parsed else None


def parse_document(markup: str) -> Document:
    """``markup`` parsed leniently (as a mail client would: broken HTML still yields a tree)."""
    try:
        root = html.document_fromstring(markup or "<html></html>")
    except (etree.ParserError, ValueError):
        root = html.document_fromstring("<html></html>")
    declarations: list[Declaration] = []
    at_rules: list[tuple[str, str, int | None]] = []
    # (important, specificity, order) -> property for each element
    weighted: dict[etree._Element, dict[str, tuple[tuple, str]]] = {}
    order = 0

    def apply(element: etree._Element, name: str, value: str, weight: tuple) -> None:
        slot = weighted.setdefault(element, {})
        if name not in slot or slot[name][0] <= weight:
            slot[name] = (weight, value)

    for style in root.iter("style"):
        line0 = style.sourceline
        for rule in tinycss2.parse_stylesheet(style.text or "", skip_comments=True):
            rule_line = None if line0 is None else line0 + rule.source_line - 1
            if rule.type == "at-rule":
                prelude = tinycss2.serialize(rule.prelude).strip()
                at_rules.append((rule.lower_at_keyword, prelude, rule_line))
                if rule.content and rule.lower_at_keyword in ("media", "supports"):
                    inner = tinycss2.parse_rule_list(rule.content, skip_comments=True)
                    for sub in inner:
                        if sub.type == "qualified-rule":
                            for name, value, important, _line in _declarations(
                                tinycss2.serialize(sub.content), line0=None
                            ):
                                declarations.append(
                                    Declaration(
                                        name,
                                        value,
                                        important,
                                        rule_line,
                                        selector=tinycss2.serialize(sub.prelude).strip(),
                                        at_rule=rule.lower_at_keyword,
                                    )
                                )
                continue
            if rule.type != "qualified-rule":
                continue
            selectors = [s.strip() for s in tinycss2.serialize(rule.prelude).split(",")]
            body = list(_declarations(tinycss2.serialize(rule.content), line0=rule_line))
            for name, value, important, line in body:
                declarations.append(
                    Declaration(name, value, important, line, selector=", ".join(selectors))
                )
            for selector in selectors:
                specificity = _specificity(selector)
                if specificity is None:
                    continue
                try:
                    matched = root.xpath(_TRANSLATOR.css_to_xpath(selector))
                except (cssselect.SelectorError, etree.XPathError):
                    continue  # :hover, ::before and the like: nothing to resolve statically
                for name, value, important, _ in body:
                    order += 1
                    for element in matched:
                        apply(element, name, value, (important, specificity, order))
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        inline = element.get("style")
        if not inline:
            continue
        for name, value, important, _ in _declarations(inline, line0=None):
            order += 1
            declarations.append(
                Declaration(name, value, important, element.sourceline, element=element)
            )
            apply(element, name, value, (important, _INLINE, order))
    styles = {el: {name: v for name, (_, v) in props.items()} for el, props in weighted.items()}
    fragment = _HTML_TAG.search(markup or "") is None
    return Document(root, declarations, at_rules, fragment, styles)
