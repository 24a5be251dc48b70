"""Periodic work another app owns (the console's daily template check and reputation guard), run
by name by Celery beat's tasks (``worker.tasks``), so the worker imports no app above this one.
Registered by dotted path as the owning app starts; imported on the first run."""

from __future__ import annotations

from typing import Any

from django.utils.module_loading import import_string

__all__ = ["register", "run"]

_REGISTERED: dict[str, str] = {}


def register(name: str, function: str) -> None:
    """``function`` (a dotted path to a callable taking keyword arguments only: those its task
    passes to ``run``) is the periodic ``name``."""
    _REGISTERED[name] = function


def run(name: str, **arguments: Any) -> Any:
    """Run the periodic work registered as ``name`` with ``arguments`` (the task's collaborators,
    e.g. ``adapters=``); a name nobody registered is a KeyError."""
    return import_string(_REGISTERED[name])(**arguments)
