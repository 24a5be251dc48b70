"""One structured event per log line, as ``event=... key=value ...`` (logfmt).

Every pipeline line carries the SQS message id, messageId, recipient and dedupe key where known, so a
single grep follows one email through the consumer.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["EventLog", "logfmt"]


def _value(value: Any) -> str:
    text = str(value)
    if text == "" or any(ch in text for ch in ' "=\n\r\t'):
        escaped = (
            text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
        )
        return f'"{escaped}"'
    return text


def logfmt(event: str, **fields: Any) -> str:
    parts = [f"event={_value(event)}"]
    parts += [f"{key}={_value(value)}" for key, value in fields.items() if value is not None]
    return " ".join(parts)


class EventLog:
    """A logger bound to fields that every line of one unit of work repeats."""

    def __init__(self, logger: logging.Logger, **bound: Any) -> None:
        self.logger = logger
        self.bound = bound

    def bind(self, **fields: Any) -> EventLog:
        return EventLog(self.logger, **{**self.bound, **fields})

    def log(self, level: int, event: str, **fields: Any) -> None:
        if self.logger.isEnabledFor(level):
            self.logger.log(level, logfmt(event, **{**self.bound, **fields}))

    def info(self, event: str, **fields: Any) -> None:
        self.log(logging.INFO, event, **fields)

    def warning(self, event: str, **fields: Any) -> None:
        self.log(logging.WARNING, event, **fields)

    def error(self, event: str, **fields: Any) -> None:
        self.log(logging.ERROR, event, **fields)
