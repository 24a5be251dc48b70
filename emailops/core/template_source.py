"""What a template's source says about itself, and the HTML it publishes as.

- **MJML** (a ``.mjml`` key, or a source whose root is ``<mjml>``) compiles to HTML with MRML
  (the Rust port of MJML, its ``mrml`` bindings). Template syntax (Go ``{{ }}``, Jinja ``{% %}``)
  is text to MJML and passes through untouched. A compile error is a ``TemplateSourceError`` with
  the line: the structure (unknown ``mj-`` element, a tag closed out of order, one never closed) is
  checked here first, since MRML's own errors seldom say where.
- **Directives**, in an HTML comment anywhere in the source:
  ``<!-- emailops: inline-css; off=contrast,link-text; spam-threshold=6 -->``. ``inline-css``
  has the ``<style>`` rules written into ``style`` attributes at publish (css-inline; ``@media``
  rules stay in ``<style>``); ``off=`` turns the named gate rules' warnings and notes off for
  this template (an error is never turned off); ``spam-threshold=`` moves the spam score's
  warning from SpamAssassin's 5.0.

The consumers (ours and the Go service) read published objects as HTML: ``publishable`` is
what is written there; the source itself is what the draft and the version history keep.
"""

from __future__ import annotations

import contextlib
import difflib
import re
from dataclasses import dataclass
from html.parser import HTMLParser

import css_inline
import mrml

__all__ = [
    "Directives",
    "TemplateSourceError",
    "authored_html",
    "compile_mjml",
    "directives",
    "inline_css",
    "is_mjml",
    "publishable",
]

_DIRECTIVE = re.compile(r"<!--\s*emailops:(?P<body>.*?)-->", re.S)
_TEMPLATE_TAG = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)
_RAW_TEXT = ("title", "style", "textarea", "script")
_POSITION = re.compile(r"position (\d+):(\d+)")
MJML_ELEMENTS = frozenset(
    [
        "mjml",
        "mj-head",
        "mj-body",
        "mj-attributes",
        "mj-all",
        "mj-class",
        "mj-breakpoint",
        "mj-font",
        "mj-html-attributes",
        "mj-html-attribute",
        "mj-selector",
        "mj-preview",
        "mj-style",
        "mj-title",
        "mj-include",
        "mj-accordion",
        "mj-accordion-element",
        "mj-accordion-title",
        "mj-accordion-text",
        "mj-button",
        "mj-carousel",
        "mj-carousel-image",
        "mj-column",
        "mj-divider",
        "mj-group",
        "mj-hero",
        "mj-image",
        "mj-navbar",
        "mj-navbar-link",
        "mj-raw",
        "mj-section",
        "mj-social",
        "mj-social-element",
        "mj-spacer",
        "mj-table",
        "mj-text",
        "mj-wrapper",
    ]
)
# Their content is HTML (or CSS, or text), not MJML: tags inside are not MJML's structure.
_ENDING = frozenset(
    [
        "mj-text",
        "mj-button",
        "mj-raw",
        "mj-table",
        "mj-navbar-link",
        "mj-accordion-title",
        "mj-accordion-text",
        "mj-social-element",
        "mj-style",
        "mj-title",
        "mj-preview",
    ]
)


class TemplateSourceError(ValueError):
    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass(frozen=True)
class Directives:
    inline_css: bool = False
    off: frozenset[str] = frozenset()
    spam_threshold: float = 5.0  # SpamAssassin's required_score


def directives(source: str) -> Directives:
    inline, off, threshold = False, set(), 5.0
    for match in _DIRECTIVE.finditer(source):
        for part in re.split(r"[;\s]+", match["body"].strip()):
            if part == "inline-css":
                inline = True
            elif part.startswith("off="):
                off |= {rule.strip() for rule in part[4:].split(",") if rule.strip()}
            elif part.startswith("spam-threshold="):
                with contextlib.suppress(ValueError):
                    threshold = float(part.split("=", 1)[1])
    return Directives(inline, frozenset(off), threshold)


def is_mjml(key: str, source: str) -> bool:
    return key.endswith(".mjml") or source.lstrip().lower().startswith("<mjml")


class _Structure(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, int]] = []
        self.error: TemplateSourceError | None = None

    def _inside_content(self) -> bool:
        return bool(self.stack) and self.stack[-1][0] in _ENDING

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self._open(tag, closed=False)

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        self._open(tag, closed=True)

    def _open(self, tag: str, *, closed: bool) -> None:
        if self.error or self._inside_content() or not tag.startswith("mj"):
            return
        line = self.getpos()[0]
        if tag not in MJML_ELEMENTS:
            close = difflib.get_close_matches(tag, MJML_ELEMENTS, n=1)
            hint = f" (did you mean <{close[0]}>?)" if close else ""
            self.error = TemplateSourceError(f"unknown MJML element <{tag}>{hint}", line)
        elif not closed:
            self.stack.append((tag, line))

    def handle_endtag(self, tag: str) -> None:
        if self.error or not tag.startswith("mj"):
            return
        if self._inside_content() and tag != self.stack[-1][0]:
            return
        line = self.getpos()[0]
        if not self.stack:
            self.error = TemplateSourceError(f"</{tag}> closes nothing", line)
        elif self.stack[-1][0] != tag:
            opened, at = self.stack[-1]
            self.error = TemplateSourceError(
                f"</{tag}> closes <{opened}> (opened on line {at}): close <{opened}> first", line
            )
        else:
            self.stack.pop()


def _structure_error(source: str) -> TemplateSourceError | None:
    parser = _Structure()
    parser.feed(source)
    parser.close()
    if parser.error:
        return parser.error
    if parser.stack:
        tag, line = parser.stack[-1]
        return TemplateSourceError(f"<{tag}> is never closed", line)
    return None


_AUTHORED = re.compile(
    r"(<(?P<tag>mj-style|mj-raw|mj-text|mj-button|mj-table|mj-navbar-link|mj-accordion-title|"
    r"mj-accordion-text|mj-social-element)\b[^>]*>)(?P<body>.*?)(</(?P=tag)\s*>)",
    re.S,
)


def authored_html(source: str) -> str:
    """The HTML and CSS an MJML ``source``'s author wrote (``<mj-style>``, ``<mj-raw>``, the
    content of ``<mj-text>``...), on the lines they are written on: everything else blanked."""
    kept = []
    last = 0
    for match in _AUTHORED.finditer(source):
        kept.append(re.sub(r"[^\n]", " ", source[last : match.start("body")]))
        body = match["body"]
        kept.append(f"<style>{body}</style>" if match["tag"] == "mj-style" else body)
        last = match.end("body")
    kept.append(re.sub(r"[^\n]", " ", source[last:]))
    return "".join(kept)


def compile_mjml(source: str) -> str:
    """The HTML of the MJML ``source``; ``TemplateSourceError`` (with the line) if it is not
    valid MJML."""
    error = _structure_error(source)
    if error:
        raise error
    try:
        return mrml.to_html(source).content
    except (OSError, ValueError) as exc:
        message = str(exc)
        at = _POSITION.search(message)
        line = source.count("\n", 0, int(at[1])) + 1 if at else None
        raise TemplateSourceError(f"MJML does not compile: {message}", line) from exc


def inline_css(html: str) -> str:
    """``html`` with its ``<style>`` rules written into ``style`` attributes (``@media`` kept in
    ``<style>``), template syntax untouched: each ``{{ }}``/``{% %}`` is swapped for a marker
    first, since an HTML parser moves text it finds between table rows out of the table."""
    saved: list[str] = []

    def protect(match: re.Match[str]) -> str:
        saved.append(match[0])
        start = match.start()
        in_tag = html.rfind("<", 0, start) > html.rfind(">", 0, start)
        before = html[:start].lower()
        raw_text = any(before.rfind(f"<{t}") > before.rfind(f"</{t}") for t in _RAW_TEXT)
        index = len(saved) - 1
        return f"eotpl{index}x" if in_tag or raw_text else f"<!--eotpl{index}x-->"

    protected = _TEMPLATE_TAG.sub(protect, html)
    inliner = css_inline.CSSInliner(keep_at_rules=True, load_remote_stylesheets=False)
    result = inliner.inline(protected)
    return re.sub(r"(<!--)?eotpl(\d+)x(-->)?", lambda m: saved[int(m[2])], result)


def publishable(key: str, source: str) -> str:
    """The HTML a template's ``source`` publishes as: MJML compiled, CSS inlined if it asks."""
    html = compile_mjml(source) if is_mjml(key, source) else source
    return inline_css(html) if directives(source).inline_css else html
