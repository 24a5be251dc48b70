"""The publish gate's accessibility rules on a rendered email (WCAG 2.1, as screen readers and
mail clients meet it): ``lang``, ``title``, ``img-alt``, ``link-text``, ``heading-order``,
``layout-table`` and ``contrast`` (AA: 4.5:1, 3:1 for large text, on the colours the cascade
resolves). Pure: it reads the parsed document (``emailops.core.template_dom``) and returns
findings, all warnings (a publish needs them confirmed, never blocked). ``lang`` and ``title``
are a full document's: a body fragment (no ``<html>``) has nowhere to hold them."""

from __future__ import annotations

import re
from collections.abc import Callable

import tinycss2
from lxml import etree
from tinycss2 import color3

from emailops.core.template_dom import Document, excerpt
from emailops.core.template_findings import WARNING, Finding

__all__ = ["accessibility_findings", "background_behind", "contrast_ratio"]

_VAGUE = frozenset(
    {"click here", "here", "click", "this", "link", "this link", "more", "read more", "go"}
)
_URL_TEXT = re.compile(r"^(https?://|www\.)\S+$", re.I)
_SKIP_TEXT = frozenset({"head", "style", "script", "title", "noscript", "template"})
_HEADING = re.compile(r"^h([1-6])$")
_LENGTH = re.compile(r"^\s*([\d.]+)\s*(px|pt|em|rem|%)?\s*$")
_HEADING_PX = {"h1": 32.0, "h2": 24.0, "h3": 18.72, "h4": 16.0, "h5": 13.28, "h6": 10.72}
_WHITE = (1.0, 1.0, 1.0)
_BLACK = (0.0, 0.0, 0.0)

Emit = Callable[[str, str, etree._Element, str], None]


def _text_of_link(link: etree._Element) -> str:
    words = [link.text_content()]
    words += [img.get("alt") or "" for img in link.iter("img")]
    words.append(link.get("aria-label") or link.get("title") or "")
    return " ".join(" ".join(words).split())


def _document_rules(doc: Document, emit: Emit) -> None:
    if doc.fragment:  # a body fragment has no <html> or <head> to hold them
        return
    root = doc.root
    lang = (root.get("lang") or "").strip()
    if not lang or lang.lower() == "und":
        emit(
            "lang",
            f"<html> has {'lang=' + repr(lang) if lang else 'no lang'}: screen readers guess the "
            "language and read the text with the wrong voice",
            root,
            'add the language of the text: <html lang="en"> (MJML: <mjml lang="en">)',
        )
    titles = [t for t in root.iter("title") if (t.text_content() or "").strip()]
    if not titles:
        emit(
            "title",
            "the document has no <title>: a screen reader announces the message without a name, "
            "and some clients show it in the tab or preview",
            root,
            "add <title> with the subject to <head> (MJML: <mj-title>)",
        )


def _element_rules(doc: Document, emit: Emit) -> None:
    last_level = 0
    for element in doc.elements():
        tag = element.tag
        if tag == "img" and element.get("alt") is None:
            emit(
                "img-alt",
                "image without alt: screen readers read its file name, and clients that block "
                "images show nothing in its place",
                element,
                'describe what it shows in alt="..."; alt="" only for a decorative image',
            )
        elif tag == "a" and element.get("href") is not None:
            text = _text_of_link(element)
            if not text:
                problem = "a link with no text: a screen reader reads its URL"
            elif text.lower().strip(" .!>»") in _VAGUE:
                problem = f'link text "{text}" does not say where it goes'
            elif _URL_TEXT.match(text):
                problem = "a raw URL as link text: read out character by character"
            else:
                continue
            emit(
                "link-text",
                problem,
                element,
                'say where it goes: "Open your dataset", not "click here"',
            )
        elif _HEADING.match(tag):
            level = int(tag[1])
            if last_level and level > last_level + 1:
                emit(
                    "heading-order",
                    f"<{tag}> follows <h{last_level}>: a heading level is skipped, so the "
                    "outline a screen reader navigates by has a hole",
                    element,
                    f"use <h{last_level + 1}> here (style the size with CSS)",
                )
            last_level = level
        elif tag == "table":
            role = (element.get("role") or "").lower()
            data = element.find(".//th") is not None or element.find(".//caption") is not None
            if role not in ("presentation", "none") and not data:
                emit(
                    "layout-table",
                    'a table used for layout without role="presentation": screen readers '
                    "announce rows and columns that mean nothing",
                    element,
                    'add role="presentation" to the layout <table>',
                )


# --- contrast ----------------------------------------------------------------------------------


def _luminance(rgb: tuple[float, float, float]) -> float:
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    """WCAG's contrast ratio of two sRGB colours (channels 0..1): 1 to 21."""
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _color(value: str | None) -> tuple[float, float, float, float] | None:
    if not value:
        return None
    parsed = color3.parse_color(value.strip())
    if parsed is None or parsed == "currentColor":
        return None
    return (parsed.red, parsed.green, parsed.blue, parsed.alpha)


def background_behind(
    doc: Document, element: etree._Element, *, default: tuple[float, float, float] | None = _WHITE
) -> tuple[float, float, float] | None:
    """The colour behind ``element``: the nearest background colour up the tree (``default``,
    white, at the top); None when an image is behind it first (its colours cannot be known
    here)."""
    node: etree._Element | None = element
    while node is not None:
        declared = doc.declared(node)
        shorthand = declared.get("background", "")
        if (
            "url(" in shorthand
            or "url(" in declared.get("background-image", "")
            or (node.get("background"))
        ):
            return None
        color = _color(declared.get("background-color")) or _color(node.get("bgcolor"))
        if color is None and shorthand:
            for token in tinycss2.parse_component_value_list(shorthand):
                color = _color(tinycss2.serialize([token]))
                if color is not None:
                    break
        if color is not None and color[3] > 0:
            return color[:3]  # a translucent background is taken as opaque: close enough here
        node = node.getparent()
    return default


def _font_px(doc: Document, element: etree._Element) -> float:
    node: etree._Element | None = element
    scale = 1.0
    while node is not None:
        size = doc.declared(node).get("font-size")
        match = _LENGTH.match(size) if size else None
        if match:
            number, unit = float(match[1]), match[2] or "px"
            if unit == "px":
                return number * scale
            if unit == "pt":
                return number * 4 / 3 * scale
            if unit == "rem":
                return number * 16 * scale
            scale *= number / 100 if unit == "%" else number
        elif node.tag in _HEADING_PX:
            return _HEADING_PX[node.tag] * scale
        node = node.getparent()
    return 16.0 * scale


def _bold(doc: Document, element: etree._Element) -> bool:
    weight = (doc.computed(element, "font-weight") or "").strip().lower()
    if weight:
        return weight in ("bold", "bolder") or (weight.isdigit() and int(weight) >= 700)
    return (
        any(
            a.tag in ("b", "strong", "h1", "h2", "h3", "h4", "h5", "h6", "th")
            for a in element.iterancestors()
        )
        or element.tag in ("b", "strong", "th")
        or bool(_HEADING.match(element.tag))
    )


def _foreground(doc: Document, element: etree._Element) -> tuple[float, float, float, float]:
    node: etree._Element | None = element
    while node is not None:
        color = _color(doc.declared(node).get("color"))
        if color is None and node.tag == "font":
            color = _color(node.get("color"))
        if color is not None:
            return color
        node = node.getparent()
    return (*_BLACK, 1.0)


def _has_text(element: etree._Element) -> bool:
    if (element.text or "").strip():
        return True
    return any((child.tail or "").strip() for child in element)


def _hidden(doc: Document, element: etree._Element) -> bool:
    """Not shown: a preheader (``display:none``, ``max-height:0``...) or the like, on the element
    or an ancestor, or text whose own size comes to 0 (MJML's cells are ``font-size:0`` around
    text that sets its own)."""
    if _font_px(doc, element) == 0:
        return True
    for node in (element, *element.iterancestors()):
        declared = doc.declared(node)
        if declared.get("display", "").startswith("none") or declared.get(
            "visibility", ""
        ).startswith("hidden"):
            return True
        if any(
            _LENGTH.match(declared.get(name, "")) and float(_LENGTH.match(declared[name])[1]) == 0
            for name in ("max-height", "opacity")
        ):
            return True
        if node.get("hidden") is not None or node.get("aria-hidden") == "true":
            return True
    return False


def _contrast_rules(doc: Document, emit: Emit) -> None:
    seen: set[tuple] = set()
    for element in doc.elements():
        if element.tag in _SKIP_TEXT or not _has_text(element):
            continue
        if any(a.tag in _SKIP_TEXT for a in element.iterancestors()) or _hidden(doc, element):
            continue
        background = background_behind(doc, element)
        if background is None:
            continue
        r, g, b, alpha = _foreground(doc, element)
        text = tuple(
            alpha * c + (1 - alpha) * bg for c, bg in zip((r, g, b), background, strict=True)
        )
        size = _font_px(doc, element)
        large = size >= 24 or (size >= 18.66 and _bold(doc, element))
        needed = 3.0 if large else 4.5
        ratio = contrast_ratio(text, background)
        key = (text, background, large)
        if ratio >= needed or key in seen:
            continue
        seen.add(key)
        emit(
            "contrast",
            f"text contrast {ratio:.2f}:1 ({_hex(text)} on {_hex(background)}), below WCAG AA's "
            f"{needed:g}:1 for {'large' if large else 'normal'} text: hard to read for many, "
            "unreadable on a phone in sunlight",
            element,
            f"darken the text or lighten the background to reach {needed:g}:1 "
            "(e.g. #595959 or darker on white)",
        )


def _hex(rgb: tuple[float, ...]) -> str:
    return "#" + "".join(f"{round(c * 255):02x}" for c in rgb[:3])


def accessibility_findings(
    doc: Document,
    *,
    key: str,
    organization: str | None,
    line_of: Callable[[etree._Element], int | None],
) -> list[Finding]:
    """Every accessibility finding of ``doc``; ``line_of`` says which line an element is on."""
    found: list[Finding] = []

    def emit(rule: str, message: str, element: etree._Element, fix: str) -> None:
        found.append(
            Finding(
                WARNING, rule, message, key, organization, line_of(element), excerpt(element), fix
            )
        )

    _document_rules(doc, emit)
    _element_rules(doc, emit)
    _contrast_rules(doc, emit)
    return found
