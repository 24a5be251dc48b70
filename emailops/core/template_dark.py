"""The publish gate's ``dark-mode`` rule: what a mail client's dark mode can make vanish.

Apple Mail, Outlook and the Gmail apps darken the background of a message that does not style
its own dark mode (some invert its colours outright, keeping images as they are). An image that
can be transparent (PNG, GIF, SVG, WebP) then shows on dark grey whatever background colour the
template gave its cell (a forced inversion darkens that too): a dark logo drawn on transparency
disappears. The rule warns for each such image, unless the template styles its dark mode itself
(a ``prefers-color-scheme`` media rule), which it is then trusted to do for its images too. The
pixels are not read (the check fetches nothing): a PNG whose background is filled passes the eye
but not this rule; serve it as JPEG or turn the rule off for the template.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from lxml import etree

from emailops.core.template_dom import Document, excerpt
from emailops.core.template_findings import WARNING, Finding

__all__ = ["dark_mode_findings"]

_TRANSPARENT = re.compile(r"(\.(png|gif|svg|webp)([?#].*)?$)|^data:image/(png|gif|svg|webp)", re.I)


def _styles_dark_mode(doc: Document) -> bool:
    return any(
        name == "media" and "prefers-color-scheme" in prelude for name, prelude, _ in doc.at_rules
    )


def dark_mode_findings(
    doc: Document,
    *,
    key: str,
    organization: str | None,
    line_of: Callable[[etree._Element], int | None],
) -> list[Finding]:
    if _styles_dark_mode(doc):
        return []
    found = []
    for image in doc.root.iter("img"):
        src = (image.get("src") or "").strip()
        if not _TRANSPARENT.search(src):
            continue
        found.append(
            Finding(
                WARNING,
                "dark-mode",
                "an image that may be transparent: in a client's dark mode it shows on dark "
                "grey, and a dark logo drawn on transparency vanishes",
                key,
                organization,
                line_of(image),
                excerpt(image),
                "use a logo with an opaque background (JPEG, or its PNG background filled) or "
                "a light outline, or style dark mode with @media (prefers-color-scheme: dark)",
            )
        )
    return found
