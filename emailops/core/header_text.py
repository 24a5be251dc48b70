"""Text that SES puts into a header as written: recipient display names, subjects, the From name.

CR and LF would start a new header. The other line breaks Unicode knows (VT, FF, FS/GS/RS, NEL,
U+2028/U+2029) do the same to any reader that splits lines as ``str.splitlines`` does, and NUL and
the other controls are no text at all (C strings end at a NUL). So every C0 and C1 control character (U+0000-U+001F,
U+007F-U+009F, tab included) and the line and paragraph separators are refused wherever such text
enters, with the field named: ``recipients[1].name: control character U+000B``.
"""

from __future__ import annotations

import re

__all__ = ["control_character", "control_problem"]

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def control_character(text: str) -> str | None:
    """The first control character in ``text`` as ``U+000B``; None when it has none."""
    found = _CONTROL.search(text)
    return f"U+{ord(found[0]):04X}" if found else None


def control_problem(field: str, text: str) -> str | None:
    """``field: control character U+000B`` when ``text`` holds one, else None."""
    found = control_character(text)
    return f"{field}: control character {found}" if found else None
