"""An index in Redis: one set of a table's keys (``<SES_RATE_REDIS_KEY>:suppressed:erased``, the
erasure tombstones' hashes; the suppression check no longer uses one, see core.suppression_index).

The set also holds a marker member (``_COMPLETE``, never a key: keys are stripped) that only a full
rebuild from the table adds, so an evicted, expired or half-written set is seen as incomplete and
never answers "not there". Writers bump ``<key>:epoch`` with every change; a
rebuild commits (one Lua script) only if no write happened while it read the table, so a removal or
addition racing the rebuild is never lost. The set expires ``max_age`` seconds after its build,
which bounds how long a change whose writer could not reach Redis goes unseen.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import TypeVar

import redis

from emailops.core.suppression_index import IndexIncomplete, IndexUnavailable
from emailops.redis.client import connect, location, translated

__all__ = ["RedisSuppressionIndex"]

T = TypeVar("T")
_COMPLETE = " complete"  # a leading space: no stored address has one
_BATCH = 1000

# KEYS: set, epoch, building set, lock. ARGV: the epoch read before the table, max age, lock token.
_COMMIT = """
local epoch = redis.call('GET', KEYS[2]) or '0'
local ours = redis.call('GET', KEYS[4]) == ARGV[3]
if epoch ~= ARGV[1] or not ours then
  redis.call('DEL', KEYS[3])
  if ours then redis.call('DEL', KEYS[4]) end
  return 0
end
redis.call('SADD', KEYS[3], ARGV[4])
redis.call('RENAME', KEYS[3], KEYS[1])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
redis.call('DEL', KEYS[4])
return 1
"""


class RedisSuppressionIndex:
    def __init__(self, client: redis.Redis, *, key: str, max_age: int = 3600) -> None:
        self.client = client
        self.key = key
        self.max_age = max_age
        self._commit = client.register_script(_COMMIT)
        self._where = location(client)

    @classmethod
    def from_url(
        cls, url: str, *, key: str, max_age: int = 3600, timeout: float = 0.5
    ) -> RedisSuppressionIndex:
        """Short timeouts, as for the send rate: a slow Redis costs a probe, then the table."""
        return cls(connect(url, timeout=timeout), key=key, max_age=max_age)

    def contains(self, address: str) -> bool:
        complete, member = self._do(lambda: self.client.smismember(self.key, [_COMPLETE, address]))
        if not complete:
            raise IndexIncomplete(f"{self.key} is not built")
        return bool(member)

    def added(self, address: str) -> None:
        self._write("sadd", address)

    def removed(self, address: str) -> None:
        self._write("srem", address)

    def rebuild(self, addresses: Callable[[], Iterable[str]]) -> bool:
        token = uuid.uuid4().hex
        lock, building = f"{self.key}:rebuild", f"{self.key}:building"
        # The lock outlives a rebuild that dies halfway; another consumer retries after it.
        if not self._do(lambda: self.client.set(lock, token, nx=True, ex=120)):
            return False
        epoch = self._do(lambda: self.client.get(f"{self.key}:epoch")) or b"0"
        self._do(lambda: self.client.delete(building))
        batch: list[str] = []
        for address in addresses():
            batch.append(address)
            if len(batch) == _BATCH:
                self._do(lambda b=batch: self.client.sadd(building, *b))
                batch = []
        if batch:
            self._do(lambda: self.client.sadd(building, *batch))
        keys = [self.key, f"{self.key}:epoch", building, lock]
        argv = [epoch.decode(), self.max_age, token, _COMPLETE]
        return bool(self._do(lambda: self._commit(keys=keys, args=argv)))

    def _write(self, command: str, address: str) -> None:
        def run() -> None:
            pipe = self.client.pipeline(transaction=True)
            getattr(pipe, command)(self.key, address)
            pipe.incr(f"{self.key}:epoch")
            pipe.execute()

        self._do(run)

    def _do(self, call: Callable[[], T]) -> T:
        with translated(self._where, IndexUnavailable):
            return call()
