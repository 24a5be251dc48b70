"""The publish gate's options as this deployment runs it (``emailops.core.template_gate``): the
email clients that count, from the configuration."""

from __future__ import annotations

from typing import TYPE_CHECKING

from emailops.core.template_gate import GateOptions

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = ["gate_options"]


def gate_options(*, adapters: Container) -> GateOptions:
    return GateOptions()
