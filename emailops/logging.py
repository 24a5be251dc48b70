"""A logging formatter that prefixes each line with ts/level/logger in logfmt.

Pipeline code already writes its message as ``event=... key=value``; other libraries' plain messages
are quoted into ``msg=`` so every line stays machine-readable.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

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
            line += (
                " "
                + logfmt("x", traceback=self.formatException(record.exc_info))[len("event=x ") :]
            )
        return line
