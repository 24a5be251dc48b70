"""DynamoDB applies a conditional write atomically; moto checks the condition, then writes, with no
lock, so two threads can both pass one condition (seen: two batches of one email's events both
"applied" the same Bounce). Tests that write from several threads need DynamoDB's guarantee, not
moto's race: ``with atomic_dynamodb_writes():`` serialises moto's DynamoDB writes in-process."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_WRITES = ("put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item")


@contextmanager
def atomic_dynamodb_writes() -> Iterator[None]:
    from moto.dynamodb.models import DynamoDBBackend

    lock = threading.RLock()
    originals = {name: getattr(DynamoDBBackend, name) for name in _WRITES}

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
