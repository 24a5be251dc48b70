"""The dark previews of a render, beside the light one (the draft page): the email as a client in
dark mode shows it, in two ways clients do it.

- ``prefers_dark``: the template's own ``@media (prefers-color-scheme: dark)`` rules applied (a
  preview frame cannot be told the reader's preference, so the rules are rewritten to apply),
  on the dark canvas ``color-scheme: dark`` gives the page.
- ``forced_inversion``: what Outlook.com and the Gmail apps do to a message that styles no dark
  mode: every colour inverted (lightness flipped, hues kept), images left as they are, so a dark
  logo drawn on transparency disappears into the dark background.
"""

from __future__ import annotations

import re

__all__ = ["forced_inversion", "prefers_dark"]

_DARK_MEDIA = re.compile(r"@media([^{]*?)\(\s*prefers-color-scheme\s*:\s*dark\s*\)", re.I)
_INVERT = (
    "<style>html{filter:invert(1) hue-rotate(180deg);background:#fff}"
    "img,picture,video,[style*='background-image']{filter:invert(1) hue-rotate(180deg)}</style>"
)
_DARK = "<style>:root{color-scheme:dark;background:#121212;color:#e8e8e8}</style>"


def _inject(html: str, style: str) -> str:
    """``style`` at the top of the head: after ``<head>``, else after ``<html>`` or the doctype
    (before them a page falls into quirks mode), else first."""
    for opening in (r"<head[^>]*>", r"<html[^>]*>", r"<!doctype[^>]*>"):
        found = re.search(opening, html, re.I)
        if found:
            return html[: found.end()] + style + html[found.end() :]
    return style + html


def prefers_dark(html: str) -> str:
    rewritten = _DARK_MEDIA.sub(lambda m: f"@media{m[1]}all", html)
    return _inject(rewritten, _DARK)


def forced_inversion(html: str) -> str:
    return _inject(html, _INVERT)
