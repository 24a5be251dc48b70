"""The template check's rules on a render's links and images: a ``javascript:`` URL is an error;
an ``http:`` link or image is a warning, each with the source line it comes from where that can
be told. (An image without ``alt`` is the gate's ``img-alt``: ``emailops.core.template_a11y``.)"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

from emailops.core.template_findings import ERROR, WARNING, Finding

__all__ = ["link_findings"]

# Browsers ignore ASCII whitespace and control characters inside a scheme ("java\tscript:").
_IGNORED_IN_SCHEME = re.compile(r"[\x00-\x20]")
# Attributes that load or navigate to a URL.
_URL_ATTRIBUTES = {
    "a": ("href",),
    "area": ("href",),
    "img": ("src",),
    "link": ("href",),
    "form": ("action",),
    "iframe": ("src",),
    "script": ("src",),
    "input": ("src", "formaction"),
    "button": ("formaction",),
    "source": ("src",),
    "video": ("src", "poster"),
    "audio": ("src",),
}


@dataclass(frozen=True)
class _Tag:
    name: str
    attrs: dict[str, str | None]
    line: int


class _TagCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[_Tag] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(_Tag(tag, dict(attrs), self.getpos()[0]))

    handle_startendtag = handle_starttag


def _tags(html: str) -> list[_Tag]:
    parser = _TagCollector()
    try:
        parser.feed(html)
        parser.close()
    except (AssertionError, ValueError):  # html.parser gives up on some broken markup
        pass
    return parser.tags


def _scheme(url: str) -> str:
    cleaned = _IGNORED_IN_SCHEME.sub("", url).lower()
    return cleaned.split(":", 1)[0] if ":" in cleaned else ""


def _source_line(source: str, needle: str) -> int | None:
    """The source line holding ``needle`` (a rendered attribute value), if it is written there."""
    needle = needle.strip()[:80]
    if not needle:
        return None
    at = source.find(needle)
    return source.count("\n", 0, at) + 1 if at >= 0 else None


def link_findings(html: str, source: str, *, key: str, organization: str | None) -> list[Finding]:
    found: list[Finding] = []
    rendered = _tags(html)

    def finding(severity: str, code: str, message: str, line: int | None) -> None:
        found.append(Finding(severity, code, message, key, organization, line))

    for tag in rendered:
        for attr in _URL_ATTRIBUTES.get(tag.name, ()):
            url = tag.attrs.get(attr) or ""
            scheme = _scheme(url)
            line = _source_line(source, url)
            if scheme == "javascript":
                finding(ERROR, "javascript-link", f"<{tag.name} {attr}> is a javascript: URL", line)
            elif scheme == "http" and tag.name in ("a", "area", "img", "link"):
                what = "image" if tag.name == "img" else "link"
                shown = url if len(url) <= 80 else url[:77] + "..."
                finding(
                    WARNING,
                    f"http-{what}",
                    f"insecure http: {what} {shown} (use https:)",
                    line,
                )
    return found
