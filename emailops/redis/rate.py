"""The shared send-rate state in Redis.

One hash per SES account (``SES_RATE_REDIS_KEY``) holds the next free send slot, the AIMD factor
(and when it was cut) and the daily-quota pause. One Lua script reads and updates it atomically,
timed by the Redis server's own clock (``TIME``), so the machines' clocks never matter: every
consumer on every machine is paced against one timeline. See ``emailops.core.ratelimit`` for why
the bucket hands out slots (GCRA) rather than keeping a log of sends.
"""

from __future__ import annotations

import redis

from emailops.core.ratelimit import Aimd, BucketUnavailable, Grant
from emailops.redis.client import connect, location, translated

__all__ = ["RedisBucketStore"]

# KEYS[1]: the hash. ARGV[1]: the operation, then its arguments (seconds and fractions as text).
# Replies are integers (Redis truncates Lua numbers): {granted, wait µs, factor ppm, paused µs}.
_SCRIPT = """
if redis.replicate_commands then redis.replicate_commands() end  -- TIME before writes (Redis < 5)
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local key, op = KEYS[1], ARGV[1]
local s = redis.call('HMGET', key, 'slot', 'factor', 'since', 'paused')
local slot, factor, since, paused = tonumber(s[1]), tonumber(s[2]), tonumber(s[3]), tonumber(s[4])
local step, every, ttl = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])

local function text(x) return string.format('%.6f', x) end
local function reply(granted, wait, f, pause)
  return {granted, math.ceil(wait * 1000000), math.floor(f * 1000000), math.ceil(pause * 1000000)}
end

-- The AIMD factor now: the last cut plus one step per `every` seconds since (computed, not stored).
local f = 1
if factor then f = math.min(1, factor + step * math.floor(math.max(0, now - since) / every)) end

if op == 'reserve' then
  local rate, horizon = tonumber(ARGV[5]), tonumber(ARGV[6])
  if paused and paused > now then return reply(0, 0, f, paused - now) end
  local at = math.max(slot or now, now)
  if at - now > horizon then return reply(0, at - now - horizon, f, 0) end
  redis.call('HSET', key, 'slot', text(at + 1 / (rate * f)))
  redis.call('EXPIRE', key, ttl)
  return reply(1, at - now, f, 0)
elseif op == 'throttle' then
  local decrease, floor, cooldown = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
  if (not factor) or now - since >= cooldown then
    f = math.max(floor, f * decrease)
    redis.call('HSET', key, 'factor', text(f), 'since', text(now))
    redis.call('EXPIRE', key, ttl)
  end
  return reply(0, 0, f, 0)
elseif op == 'pause' then
  local untl = math.max(paused or 0, now + tonumber(ARGV[5]))
  redis.call('HSET', key, 'paused', text(untl))
  redis.call('EXPIRE', key, math.max(ttl, math.ceil(untl - now) + 60))
  return reply(0, 0, f, untl - now)
end
return redis.error_reply('unknown operation ' .. tostring(op))
"""

_IDLE_TTL = 3600  # an idle bucket disappears after an hour; nothing in it matters by then


class RedisBucketStore:
    backend = "redis"

    def __init__(self, client: redis.Redis, *, key: str) -> None:
        self.client = client
        self.key = key
        self._script = client.register_script(_SCRIPT)  # EVALSHA, EVAL when not cached
        self._where = location(client)

    @classmethod
    def from_url(cls, url: str, *, key: str, timeout: float = 0.5) -> RedisBucketStore:
        """Short timeouts: a slow Redis must cost a probe, not a stalled consumer. One immediate
        retry reconnects a pooled connection that died with a Redis restart."""
        return cls(connect(url, timeout=timeout), key=key)

    def reserve(self, *, rate: float, aimd: Aimd, horizon: float) -> Grant:
        granted, wait, factor, paused = self._run("reserve", aimd, rate, horizon)
        return Grant(bool(granted), wait / 1e6, factor / 1e6, paused=paused / 1e6)

    def throttled(self, *, aimd: Aimd, floor: float) -> float:
        return self._run("throttle", aimd, aimd.decrease, floor, aimd.cooldown)[2] / 1e6

    def pause(self, seconds: float) -> None:
        self._run("pause", Aimd(), seconds)

    def _run(self, op: str, aimd: Aimd, *args: float) -> list[int]:
        argv = [op, repr(aimd.step), repr(aimd.every), _IDLE_TTL, *(repr(float(a)) for a in args)]
        with translated(self._where, BucketUnavailable):
            return self._script(keys=[self.key], args=argv)
