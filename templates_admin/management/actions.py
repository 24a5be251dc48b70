"""Commands made of actions (``manage.py templates draft``, ``manage.py webhooks add``): each
action is a subcommand taking ``--json``, run by the command's method ``_<action>``, which prints
through ``emit`` (JSON, or the text an operator reads)."""

from __future__ import annotations

import contextlib
import json
import logging
from argparse import ArgumentParser
from collections.abc import Callable, Iterator
from typing import Any

from django.core.management.base import BaseCommand

from emailops.logging import LogfmtFormatter

__all__ = ["ActionCommand", "HumanCommand", "log_lines_hidden"]


@contextlib.contextmanager
def log_lines_hidden() -> Iterator[None]:
    """The log's handlers show ERROR and above only, for the time being: the events a change
    logs (``webhook.endpoint_enabled``, ``reputation.pause_lifted`` …) are for the log, not for
    the person at a shell, who reads the command's own line."""
    handlers = [h for h in logging.getLogger().handlers if isinstance(h.formatter, LogfmtFormatter)]
    levels = [handler.level for handler in handlers]
    for handler in handlers:
        handler.setLevel(max(handler.level, logging.ERROR))
    try:
        yield
    finally:
        for handler, level in zip(handlers, levels, strict=True):
            handler.setLevel(level)


class HumanCommand(BaseCommand):
    """A command whose output is read by a person: no log lines below ERROR among it (``-v 2``
    shows them)."""

    def execute(self, *args: Any, **options: Any) -> Any:
        if options.get("verbosity", 1) >= 2:
            return super().execute(*args, **options)
        with log_lines_hidden():
            return super().execute(*args, **options)


class ActionCommand(HumanCommand):
    # The system checks import the URLconf (the console, the API): 0.4 s of every run of an
    # operator's command. `manage.py check` (CI, the deploy) runs them.
    requires_system_checks: list[str] = []
    as_json = False

    def add_actions(
        self, parser: ArgumentParser, *, common: Callable[[ArgumentParser], Any] | None = None
    ) -> Callable[[str, str], ArgumentParser]:
        """The function that adds one action (name, help): its parser, with ``--json`` and
        whatever ``common`` adds to every action."""
        sub = parser.add_subparsers(dest="action", required=True)

        def action(name: str, help_text: str) -> ArgumentParser:
            command = sub.add_parser(name, help=help_text)
            command.add_argument("--json", action="store_true", help="print JSON")
            if common is not None:
                common(command)
            return command

        return action

    def run_action(self, action: str, options: dict[str, Any]) -> Any:
        self.as_json = options["json"]
        return getattr(self, f"_{action}")(options)

    def emit(self, data: Any, text: str) -> None:
        self.stdout.write(json.dumps(data, indent=2) if self.as_json else text)
