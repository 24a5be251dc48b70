"""The capabilities a configuration can leave off, and the one start-up line that says so.

Every capability is on in ``make run`` and docker/compose.yml with no setting. An operator may turn
one off; a process that would use it then logs ``capability.off`` once at start-up, naming the
setting, so "nothing arrived" is never a silence to puzzle over (issue 31).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from emailops.config import Config
from emailops.core.events import EventLog

__all__ = ["UNSUBSCRIBE_LINKS", "WEBHOOKS", "Capability", "report_off"]

logger = logging.getLogger("emailops.capabilities")


@dataclass(frozen=True)
class Capability:
    name: str
    setting: str  # the variable that turns it off (and on again)
    consequence: str  # what goes missing, in a few words
    is_off: Callable[[Config], bool]


WEBHOOKS = Capability(
    "webhooks",
    "WEBHOOK_OUTBOX",
    "no webhook events are emitted: endpoints receive only test events",
    lambda config: not config.webhooks.emitted,
)
UNSUBSCRIBE_LINKS = Capability(
    "unsubscribe_links",
    "PUBLIC_BASE_URL",
    "categorised mail goes out without List-Unsubscribe and without an unsubscribe link",
    lambda config: not config.preferences.public_base_url,
)


def report_off(config: Config, *capabilities: Capability, process: str) -> list[Capability]:
    """One ``capability.off`` line for each of ``capabilities`` (those ``process`` uses) that
    ``config`` leaves off; returns them."""
    off = [capability for capability in capabilities if capability.is_off(config)]
    for capability in off:
        EventLog(logger).info(
            "capability.off",
            capability=capability.name,
            setting=capability.setting,
            process=process,
            consequence=capability.consequence,
        )
    return off
