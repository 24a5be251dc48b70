"""A logging formatter that prefixes each line with ts/level/logger in logfmt, and the filter that
keeps unsubscribe tokens out of every line.

Pipeline code already writes its message as ``event=... key=value``; other libraries' plain messages
are quoted into ``msg=`` so every line stays machine-readable.

``RedactUnsubscribeTokens`` rewrites ``/u/<token>`` to ``/u/[token]`` in a record's message and
traceback: Django's request warnings (``django.request``'s "Bad Request: /u/…", ``django.server``'s
request lines) on the console handler (LOGGING in emailops/settings.py), and gunicorn's access
and error logs (``emailops.access_log``). A token is the recipient's credential for their
preferences, and what is in it must not reach a log that erasure cannot reach.
"""

from __future__ import annotations

import logging
import re
import sys
from datetime import UTC, datetime
from typing import TextIO

from emailops.core.events import logfmt


class LogfmtFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ts = datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        message = record.getMessage()
        prefix = f"ts={ts} level={record.levelname.lower()} logger={record.name}"
        line = (
            f"{prefix} {message}"
            if message.startswith("event=")
            else (f"{prefix} {logfmt('log', msg=message)[len('event=log ') :]}")
        )
        if record.exc_info:
            # exc_text when a filter (RedactUnsubscribeTokens) has written it already
            traceback = record.exc_text or self.formatException(record.exc_info)
            line += " " + logfmt("x", traceback=traceback)[len("event=x ") :]
        return line


# ``/u/`` then the token: anything up to the end of the path segment (a query, a quote, a space).
_UNSUBSCRIBE_TOKEN = re.compile(r"/u/[^/?#\s\"'<>]+")
REDACTED_TOKEN = "/u/[token]"


def redact_unsubscribe_tokens(text: str) -> str:
    """``text`` with every ``/u/<token>`` path (a request line, a path, a Referer) redacted."""
    return _UNSUBSCRIBE_TOKEN.sub(REDACTED_TOKEN, text) if "/u/" in text else text


class RedactUnsubscribeTokens(logging.Filter):
    """Rewrites the record's message (and its traceback) with ``redact_unsubscribe_tokens``;
    drops nothing. On a handler it sees every record written there, propagated ones too."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # the handler reports a bad format itself; never raise from here
            return True
        redacted = redact_unsubscribe_tokens(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_unsubscribe_tokens(record.exc_text)
        return True


# Go's slog levels and the Python level each maps to: Python's are 2.5 times as far apart
# (DEBUG -4 -> 10, INFO 0 -> 20, WARN 4 -> 30, ERROR 8 -> 40), so an offset scales the same way.
_SLOG_LEVELS = {"DEBUG": -4, "INFO": 0, "WARN": 4, "WARNING": 4, "ERROR": 8}
_LEVEL_TEXT = re.compile(r"^\s*([A-Za-z]+)\s*(?:([+-])\s*(\d+))?\s*$")


def go_log_level(text: str) -> tuple[int, str]:
    """``LOG_LEVEL`` read as the Go service reads it (``slog.Level`` text): DEBUG, INFO, WARN
    (or WARNING) and ERROR in any case, with an optional offset (``INFO+2``, ``DEBUG-4``).

    Returns the Python level and, for a value it cannot read, the complaint ("" otherwise): an
    unknown value means INFO, as in Go, never a failed start.
    """
    match = _LEVEL_TEXT.match(text or "")
    name = match.group(1).upper() if match else ""
    if name not in _SLOG_LEVELS:
        return logging.INFO, f"LOG_LEVEL={text!r} is not DEBUG, INFO, WARN or ERROR: using INFO"
    slog = _SLOG_LEVELS[name]
    if match.group(3):
        slog += int(match.group(3)) * (-1 if match.group(2) == "-" else 1)
    # 1 at the least: 0 is NOTSET, which would hand the choice to the root logger.
    return max(1, round(logging.INFO + 2.5 * slog)), ""


def report_log_level(complaint: str, stream: TextIO | None = None) -> None:
    """The one line about an unreadable ``LOG_LEVEL``, written before logging is configured (the
    settings read it), in the same logfmt as every other line."""
    if not complaint:
        return
    record = logging.LogRecord("emailops.settings", logging.ERROR, __file__, 0, "", None, None)
    record.msg = logfmt("settings.log_level_unknown", detail=complaint)
    print(LogfmtFormatter().format(record), file=stream or sys.stderr, flush=True)
