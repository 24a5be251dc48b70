"""A copy of in-process moto's whole state, taken once and put back before each test.

Provisioning the service's resources through boto3 (five tables, two queues, a bucket, a sender,
and for the delivery-event tests a topic, a queue and a table) costs ~0.4-0.7 s per test, almost
all of it botocore. moto keeps its state in plain objects (``BackendDict`` → account → region →
backend), so the state right after provisioning can be deep-copied once per test process and a
fresh copy installed for every test: each test starts from exactly the just-created account, in
about a millisecond. Nothing a test created, sent or changed survives it (``mock_aws`` still
resets every backend when it starts and stops).

moto's objects hold a few locks (SQS queues wait on a ``Condition``, S3 keys have a ``Lock``):
copies get new ones of their own.
"""

from __future__ import annotations

import copy
import copyreg
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from moto.core.base_backend import BackendDict

# kind → how to make a new one
_LOCKS = {
    type(threading.Lock()): threading.Lock,
    type(threading.RLock()): threading.RLock,
    threading.Condition: threading.Condition,
}


@contextmanager
def _fresh_locks() -> Iterator[None]:
    """While copying: a lock (or condition) copies as a new, unheld one of its kind."""
    saved = {kind: copyreg.dispatch_table.get(kind) for kind in _LOCKS}
    for kind, make in _LOCKS.items():
        copyreg.dispatch_table[kind] = lambda _lock, make=make: (make, ())
    try:
        yield
    finally:
        for kind, reducer in saved.items():
            if reducer is None:
                copyreg.dispatch_table.pop(kind, None)
            else:
                copyreg.dispatch_table[kind] = reducer


def _copy(backends: list[Any]) -> list[Any]:
    # One deepcopy for all of them: objects two backends share stay shared in the copy.
    with _fresh_locks():
        return copy.deepcopy(backends)


class MotoSnapshot:
    """Every region backend moto holds at ``capture()``; ``restore()`` installs copies of them
    in place of whatever moto holds then. ``facts`` carries what the provisioning returned
    (queue URLs, topic ARNs) so that a restored test needs no AWS call to learn it."""

    def __init__(self, entries: list[tuple[BackendDict, str, str, Any]], facts: dict[str, Any]):
        self._where = [(backends, account, region) for backends, account, region, _ in entries]
        self._frozen = _copy([backend for *_, backend in entries])
        self.facts = facts

    @classmethod
    def capture(cls, **facts: Any) -> MotoSnapshot:
        entries = [
            (backends, account, region, backend)
            for backends in list(BackendDict._instances)  # moto's registry of backends in use
            for account, regions in backends.items()
            for region, backend in regions.items()
        ]
        return cls(entries, facts)

    def restore(self) -> None:
        BackendDict.reset()  # what mock_aws does on start and stop; S3 closes its key buffers
        for (backends, account, region), backend in zip(
            self._where, _copy(self._frozen), strict=True
        ):
            backends[account][region] = backend  # registers ``backends`` for the next reset
