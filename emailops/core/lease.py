"""When a claim on a journal row ends: the one lease rule, for every reader and writer.

A QUEUED row's claim ends at its ``ClaimExpiresAt`` (ours write one). A row the Go consumer wrote
has none: its claim ended ``seconds`` after its ``Timestamp``, the lease length every process
shares. That length is ``CLAIM_LEASE_SECONDS``, else the request queue's visibility timeout: what
our consumer claims with and what the Go service's Lambda effectively gets. The container holds
the process's policy (``Container.lease_policy``) and reads the timeout once, when a length is
first needed: a reader that meets only rows with a ``ClaimExpiresAt`` never asks SQS.

The consumer's claims (the DynamoDB condition's numbers, ``stale_before``), the events path's
"is a claim live?", the console, ``email_log``, the API and the stuck-claims check all read this
policy, so a row is stuck on all of them at the moment the consumer may take it over, and not before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from emailops.core.errors import EmailOpsError, LeaseUnknown

__all__ = ["LeasePolicy", "LeasedRow"]


class LeasedRow(Protocol):
    """What the rule reads of a row (``JournalRow`` has it); a protocol, so that the ports'
    ``Claim`` can carry a policy without the ports importing the row."""

    @property
    def queued(self) -> bool: ...

    @property
    def claim_expires_at(self) -> int | None: ...

    @property
    def timestamp(self) -> int | None: ...


@dataclass(frozen=True)
class LeasePolicy:
    """A claim lasts ``seconds``: ours to ``ClaimExpiresAt``, a Go-era row's from its ``Timestamp``.

    ``fixed_seconds`` is CLAIM_LEASE_SECONDS; 0: ``visibility_timeout()`` is the length (the
    container's, which reads the queue once). A lease has ended when its end is strictly before
    ``now``: at the end itself the claim still holds (the claim condition says the same)."""

    fixed_seconds: int = 0
    visibility_timeout: Callable[[], int] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.fixed_seconds < 0 or (not self.fixed_seconds and self.visibility_timeout is None):
            raise ValueError("a claim lease needs a length, or the queue to read it from")

    @property
    def seconds(self) -> int:
        """How long a claim lasts. Raises LeaseUnknown when the queue cannot say: no reader
        guesses a length the consumer (which cannot start without it) does not use."""
        read = self.visibility_timeout
        if self.fixed_seconds or read is None:  # one of them, says __post_init__
            return self.fixed_seconds
        try:
            timeout = read()
        except EmailOpsError as exc:
            raise LeaseUnknown(reason=exc.describe()) from exc
        if timeout <= 0:
            raise LeaseUnknown(reason=f"the queue's visibility timeout is {timeout}")
        return timeout

    def claim_ends_at(self, now: int) -> int:
        """The ``ClaimExpiresAt`` of a claim taken (or extended) at ``now``."""
        return now + self.seconds

    def stale_before(self, now: int) -> int:
        """A Go-era row (no ``ClaimExpiresAt``) claimed before this has no live claim at ``now``:
        the claim condition's and the stuck-claims Scan's ``:stale``."""
        return now - self.seconds

    def ends_at(self, row: LeasedRow) -> int | None:
        """When a QUEUED row's claim ends (or ended); None for any other row, or when the row does
        not say when it was claimed."""
        if not row.queued:
            return None
        if row.claim_expires_at is not None:
            return row.claim_expires_at
        if row.timestamp is None:
            return None
        return row.timestamp + self.seconds

    def stuck(self, row: LeasedRow, *, now: int) -> bool:
        """QUEUED and its claim's lease has ended: nobody is sending it, the next claim takes it."""
        end = self.ends_at(row)
        return end is not None and end < now

    def held(self, row: LeasedRow, *, now: int) -> bool:
        """QUEUED and a consumer's claim on it is live at ``now`` (it may still mark the row)."""
        end = self.ends_at(row)
        return end is not None and end >= now
