"""DynamoDB applies a conditional write atomically; moto checks the condition, then writes, with no
lock, so two threads can both pass one condition (seen: two batches of one email's events both
"applied" the same Bounce). Tests that write from several threads need DynamoDB's guarantee, not
moto's race: ``with atomic_dynamodb_writes():`` serialises moto's DynamoDB writes in-process.

Reads take the same lock: moto applies an UpdateItem that creates its item (a claim) as "store
the key alone, then apply the expression to it", so a GetItem or Scan in between read a row
holding only its Id (seen after a SIGTERM mid-record on moto's server). DynamoDB never shows a
write half-applied."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_WRITES = ("put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item")
_READS = ("get_item", "query", "scan", "batch_get_item", "transact_get_items", "execute_statement")


@contextmanager
def atomic_dynamodb_writes() -> Iterator[None]:
    from moto.dynamodb.models import DynamoDBBackend

    lock = threading.RLock()
    originals = {name: getattr(DynamoDBBackend, name) for name in (*_WRITES, *_READS)}

    def locked(write: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(write)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            with lock:
                return write(self, *args, **kwargs)

        return call

    for name, write in originals.items():
        setattr(DynamoDBBackend, name, locked(write))
    try:
        yield
    finally:
        for name, write in originals.items():
            setattr(DynamoDBBackend, name, write)
