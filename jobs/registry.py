"""The job kinds the apps offer, registered as each app starts (``register_kind``, from its
AppConfig.ready): by dotted path, so registering imports nothing (no Celery, no AWS client) and a
process that runs no job pays nothing for it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.utils.module_loading import import_string

__all__ = ["loggable_inputs", "permission_of", "register_kind", "runner_of"]

# (job, progress, *, adapters) -> the job's result; typed loosely: the engine, which gives them,
# imports this.
Runner = Callable[..., dict[str, Any]]


@dataclass(frozen=True)
class _Kind:
    runner: str | Runner  # a dotted path (imported on first run: registering costs no import)
    permission: str  # "app_label.codename" a user needs to start (or retry) one
    loggable: str  # dotted path to inputs -> what the log may keep of them; "" all of them


_KINDS: dict[str, _Kind] = {}


def register_kind(name: str, *, runner: str, permission: str, loggable: str = "") -> None:
    """Register a job kind: ``runner`` (a dotted path to ``(job, progress, *, adapters) ->
    result``, ``adapters`` the running process's container) does its work, a user needs ``permission`` to start or retry one, and ``loggable`` (a dotted path to
    ``inputs -> dict``, for inputs that name a person) says what the log keeps of its inputs.
    Registering again replaces it."""
    _KINDS[name] = _Kind(runner, permission, loggable)


def permission_of(name: str) -> str:
    """The permission a user needs to start or retry a job of kind ``name``."""
    return _KINDS[name].permission


def runner_of(name: str) -> Runner:
    """The function that does a job of kind ``name``'s work (imported now, on its first run)."""
    runner = _KINDS[name].runner
    return import_string(runner) if isinstance(runner, str) else runner


def loggable_inputs(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """What the log may keep of a job's inputs (the log outlives the job's own data)."""
    loggable = _KINDS[name].loggable
    return import_string(loggable)(inputs) if loggable else inputs
