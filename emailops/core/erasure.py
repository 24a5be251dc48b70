"""Erasure that stays erased: the tombstone an erasure leaves, and how an address is named once
erased. A tombstone is a keyed hash (HMAC-SHA256) of the address's one spelling
(``contract.address_key``) with the erasure time, never the address: every later write that
carries the address (a late SES event, a redrive, a resend) checks it and stores nothing personal.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any, Protocol

from emailops.core.contract import address_key, masked_address
from emailops.core.delivery_events import DeliveryEvent
from emailops.core.events import EventLog
from emailops.core.index_guard import IndexGuard
from emailops.core.suppression_index import IndexUnavailable, SuppressionIndex

__all__ = [
    "ERASED_PREFIX",
    "IndexedTombstones",
    "TombstoneTable",
    "Tombstones",
    "address_hash",
    "address_scrubber",
    "erased_name",
    "erased_of",
    "masked_address",
    "scrubbed_event",
]

logger = logging.getLogger("emailops.erasure")

ERASED_PREFIX = "erased:"  # what an erased address is written as, where a value is required


def address_hash(key: bytes, address: str) -> str:
    """The keyed hash of ``address``'s one spelling (display names, case, needless quotes)."""
    return hmac.new(key, address_key(address).encode(), hashlib.sha256).hexdigest()


def erased_name(key: bytes, address: str) -> str:
    """What stands for an erased address in a stored record: a short form of its hash."""
    return ERASED_PREFIX + address_hash(key, address)[:24]


def address_scrubber(address: str, name: str) -> Callable[[Any], Any]:
    """A function that rewrites a stored value (a string, or lists and dicts of them, as JSON
    holds) with ``address`` replaced by ``name`` (its ``erased:`` name): a value that is the
    address in any spelling, and the address within a longer text (a row key, a reason), its
    local part quoted or not."""
    wanted = address_key(address)
    local, _, domain = wanted.rpartition("@")
    pattern = re.compile(rf'(?:"{re.escape(local)}"|{re.escape(local)})@{re.escape(domain)}', re.I)

    def scrubbed(value: Any) -> Any:
        if isinstance(value, str):
            return name if address_key(value) == wanted else pattern.sub(name, value)
        if isinstance(value, list):
            return [scrubbed(v) for v in value]
        if isinstance(value, dict):
            return {k: scrubbed(v) for k, v in value.items()}
        return value

    return scrubbed


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


class TombstoneTable(Protocol):
    """The table behind ``IndexedTombstones`` (``emailops.aws.tombstones``)."""

    def hash(self, address: str) -> str: ...

    def name(self, address: str) -> str: ...

    def erased_at(self, address: str) -> int | None: ...

    def add(self, address: str, *, now: int) -> None: ...

    def hashes(self) -> Iterator[str]:
        """Every tombstone's hash (a full read of the table)."""
        ...


class IndexedTombstones:
    """Tombstones without an AWS call per send: the suppression index's kind of Redis set holds
    every tombstone's hash, kept in step by the erasure (table first, then the set). Only a hash
    the set holds costs a table read; an incomplete set is rebuilt from the table; an unreachable
    one is skipped for ``retry_seconds`` (the table answers)."""

    def __init__(
        self,
        table: TombstoneTable,
        index: SuppressionIndex,
        *,
        clock: Callable[[], float],
        retry_seconds: float = 5.0,
    ) -> None:
        self.table = table
        self._log = EventLog(logger)
        self.guard = IndexGuard(
            index,
            full_read=table.hashes,
            name="tombstone",
            log=self._log,
            clock=clock,
            retry_seconds=retry_seconds,
        )

    def hash(self, address: str) -> str:
        return self.table.hash(address)

    def name(self, address: str) -> str:
        return self.table.name(address)

    def erased_at(self, address: str) -> int | None:
        if self.guard.absent(self.table.hash(address)):
            return None
        return self.table.erased_at(address)

    def add(self, address: str, *, now: int) -> None:
        self.table.add(address, now=now)
        try:
            self.guard.index.added(self.table.hash(address))
        except IndexUnavailable as exc:
            # The table has it; the set misses it until its next rebuild (an hour at most).
            self._log.error("tombstone.index_not_updated", error=str(exc))
