"""Erasure that stays erased: the tombstone an erasure leaves, and how an address is named once
erased. A tombstone is a keyed hash (HMAC-SHA256) of the address's one spelling
(``contract.address_key``) with the erasure time, never the address: every later write that
carries the address (a late SES event, a redrive, a resend) checks it and stores nothing personal.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import replace
from typing import Protocol

from emailops.core.contract import address_key
from emailops.core.delivery_events import DeliveryEvent

__all__ = [
    "ERASED_PREFIX",
    "Tombstones",
    "address_hash",
    "erased_name",
    "erased_of",
    "masked_address",
    "scrubbed_event",
]

ERASED_PREFIX = "erased:"  # what an erased address is written as, where a value is required


def address_hash(key: bytes, address: str) -> str:
    """The keyed hash of ``address``'s one spelling (display names, case, needless quotes)."""
    return hmac.new(key, address_key(address).encode(), hashlib.sha256).hexdigest()


def erased_name(key: bytes, address: str) -> str:
    """What stands for an erased address in a stored record: a short form of its hash."""
    return ERASED_PREFIX + address_hash(key, address)[:24]


def masked_address(address: str) -> str:
    """``d***@example.com``: enough for the person who asked to recognise it, no more."""
    local, at, domain = address_key(address).rpartition("@")
    return f"{local[:1]}***{at}{domain}" if at else "***"


class Tombstones(Protocol):
    def erased_at(self, address: str) -> int | None:
        """When ``address`` was erased (epoch seconds), or None if it never was."""
        ...

    def add(self, address: str, *, now: int) -> None:
        """Record that ``address`` was erased at ``now`` (a repeat keeps the first time)."""
        ...

    def name(self, address: str) -> str:
        """``erased_name`` of ``address`` under this store's key."""
        ...


def erased_of(tombstones: Tombstones, addresses: Iterable[str]) -> set[str]:
    """Those of ``addresses`` that were erased (as given)."""
    return {a for a in addresses if tombstones.erased_at(a) is not None}


def scrubbed_event(event: DeliveryEvent, tombstones: Tombstones) -> DeliveryEvent:
    """``event`` as it may be stored once one of its recipients was erased: the erased
    recipients named by their hash, and nothing else personal (no raw event, no journal key, which
    names the recipient, no summary or diagnostic, which quote it, no IP address or user agent)."""
    return replace(
        event,
        recipients=tuple(tombstones.name(r) for r in event.recipients),
        journal_key=None,
        summary=f"{event.raw_type} (a recipient was erased: details not kept)",
        raw={},
        diagnostic_codes=(),
        link="",
        ip_address="",
        user_agent="",
        subscription={},
        failure_message="",
    )
