"""Line endings of template sources. Browsers submit a textarea with CRLF line breaks (the HTML
standard says so), so text from the console's editor takes the line endings of the file it
replaces, LF for a new one: a template keeps its bytes, and a one-line edit stays a one-line diff."""

from __future__ import annotations

__all__ = [
    "ENDING_NAMES",
    "line_ending",
    "lines",
    "only_line_endings_differ",
    "with_line_endings_of",
]

CRLF = "\r\n"
LF = "\n"
ENDING_NAMES = {CRLF: "CRLF (Windows)", LF: "LF"}


def line_ending(text: str | None) -> str:
    """The file's line ending: CRLF when most of its line breaks are CRLF, else LF."""
    if not text:
        return LF
    crlf = text.count(CRLF)
    return CRLF if crlf > text.count(LF) - crlf else LF


def lines(text: str) -> list[str]:
    """The text's lines, whatever ends them (CRLF, LF or a lone CR), without their endings."""
    return text.replace(CRLF, LF).replace("\r", LF).split(LF)


def with_line_endings_of(text: str, original: str | None) -> str:
    """``text`` with every line break written as ``original``'s are."""
    return line_ending(original).join(lines(text))


def only_line_endings_differ(before: str, after: str) -> bool:
    return before != after and lines(before) == lines(after)
