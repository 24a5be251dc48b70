"""The publish gate's options as this deployment runs it (``emailops.core.template_gate``): the
email clients that count (TEMPLATE_CHECK_CLIENTS) and spamd's scorer (SPAMD_ADDRESS), one per
address for the process (its cache of scores is kept)."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from emailops.core.template_gate import GateOptions
from emailops.spamd import SpamdScorer

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = ["gate_options"]


@cache
def _scorer(address: str) -> SpamdScorer:
    return SpamdScorer(address)


def gate_options(*, adapters: Container) -> GateOptions:
    console, sending = adapters.config.console, adapters.config.sending
    return GateOptions(
        clients=console.template_check_clients,
        # SPAMD_ADDRESS empty: scoring is off, said once in the docs, not on every finding list
        spam=_scorer(console.spamd_address) if console.spamd_address else None,
        sender=sending.from_address or "Sender <sender@example.com>",
    )
