"""The guard's shared state in Redis, next to the send-rate bucket (``emailops.redis.rate``).

One hash (``<SES_RATE_REDIS_KEY>:reputation``) holds the pauses and slowdowns in force, field
``<priority>|<organization or *>`` → JSON ``{priority, organization, reason, since, mode, source,
by}``, plus ``hold|<priority>|<organization or *>`` → epoch seconds until which the automatic guard
must not set that pause again (a person lifted it). Every consumer reads the hash at most every
``refresh`` seconds, so a pause set anywhere is obeyed everywhere within seconds.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import redis

from emailops.core.errors import SharedStateUnavailable
from emailops.core.events import EventLog
from emailops.core.reputation import GateDecision, Priority, parse_priority
from emailops.redis.client import connect, location, translating

__all__ = ["ReputationGate", "ReputationState", "SendStop"]

V = TypeVar("V")

logger = logging.getLogger("emailops.reputation")
ANY = "*"
# The console's emergency stop: one more field of the same hash, read as often as the pauses.
STOP_FIELD = "send-stop"


def _field(priority: str, organization: str | None) -> str:
    return f"{priority}|{organization or ANY}"


class ReputationState:
    def __init__(self, client: redis.Redis, *, key: str, clock: Callable[[], float] = time.time):
        self.client = client
        self.key = key
        self._where = location(client)
        self.clock = clock

    @classmethod
    def from_url(cls, url: str, *, key: str, timeout: float = 0.5) -> ReputationState:
        return cls(connect(url, timeout=timeout, decode_responses=True), key=key)

    @translating
    def store_evaluation(self, figures: dict[str, Any]) -> None:
        """The guard's last rates per scope, for the consumers' Prometheus metrics."""
        self.client.hset(self.key, "evaluation", json.dumps(figures))

    @translating
    def evaluation(self) -> dict[str, Any]:
        raw = self.client.hget(self.key, "evaluation")
        return json.loads(raw) if raw else {}

    @translating
    def entries(self) -> list[dict[str, Any]]:
        """Pauses and slowdowns in force, oldest first."""
        found = []
        for name, value in self.client.hgetall(self.key).items():
            if name.startswith("hold|") or name in ("evaluation", STOP_FIELD):
                continue
            try:
                found.append(json.loads(value))
            except ValueError:
                continue
        return sorted(found, key=lambda e: (e.get("since", ""), e.get("priority", "")))

    @translating
    def set(
        self,
        *,
        priority: str,
        organization: str | None,
        reason: str,
        mode: str,
        source: str,
        by: str = "",
        since: str = "",
    ) -> bool:
        """Put a pause (or slowdown) in force. An automatic one never overrides a person's and is
        not set while a person's lift holds; returns whether anything was written."""
        name = _field(priority, organization)
        entry = {
            "priority": priority,
            "organization": organization,
            "reason": reason,
            "since": since,
            "mode": mode,
            "source": source,
            "by": by,
        }
        if source == "auto":
            hold = self.client.hget(self.key, f"hold|{name}")
            if hold and float(hold) > self.clock():
                return False
            current = self.client.hget(self.key, name)
            if current and json.loads(current).get("source") != "auto":
                return False
            if current and json.loads(current).get("mode") == mode:
                return False  # already in force: keep its `since`
        else:
            self.client.hdel(self.key, f"hold|{name}")
        self.client.hset(self.key, name, json.dumps(entry))
        return True

    @translating
    def lift(
        self, *, priority: str, organization: str | None, hold_seconds: float = 0
    ) -> dict[str, Any] | None:
        """Remove the entry; ``hold_seconds`` keeps the guard from setting it again that long."""
        name = _field(priority, organization)
        current = self.client.hget(self.key, name)
        pipe = self.client.pipeline()
        pipe.hdel(self.key, name)
        if hold_seconds > 0:
            pipe.hset(self.key, f"hold|{name}", str(self.clock() + hold_seconds))
        pipe.execute()
        return json.loads(current) if current else None

    @translating
    def stop(self) -> dict[str, Any] | None:
        """The emergency stop in force (``{reason, by, since}``), or None."""
        raw = self.client.hget(self.key, STOP_FIELD)
        return json.loads(raw) if raw else None

    @translating
    def set_stop(self, *, reason: str, by: str, since: str) -> None:
        self.client.hset(
            self.key, STOP_FIELD, json.dumps({"reason": reason, "by": by, "since": since})
        )

    @translating
    def lift_stop(self) -> dict[str, Any] | None:
        current = self.client.hget(self.key, STOP_FIELD)
        self.client.hdel(self.key, STOP_FIELD)
        return json.loads(current) if current else None

    @translating
    def lift_auto(self, *, priority: str, organization: str | None) -> bool:
        """Lift an automatic entry (the rates recovered); a person's stays."""
        name = _field(priority, organization)
        current = self.client.hget(self.key, name)
        if not current or json.loads(current).get("source") != "auto":
            return False
        self.client.hdel(self.key, name)
        return True


class _Refreshed(Generic[V]):
    """``read()``'s answer, read again at most every ``refresh`` seconds. Redis unreachable: the
    last answer stands (``initial`` before there is one), logged as ``event``. The answer is
    kept as one immutable tuple, so worker threads share it without a lock."""

    def __init__(
        self,
        read: Callable[[], V],
        *,
        initial: V,
        event: str,
        refresh: float,
        clock: Callable[[], float],
    ) -> None:
        self._read, self._initial, self._event = read, initial, event
        self.refresh, self.clock = refresh, clock
        self._last: tuple[float, V] | None = None
        self._log = EventLog(logger)

    def __call__(self) -> V:
        now = self.clock()
        last = self._last
        if last is not None and now - last[0] < self.refresh:
            return last[1]
        try:
            value = self._read()
        except SharedStateUnavailable as exc:
            self._log.warning(self._event, error=f"{type(exc).__name__}: {exc}")
            value = last[1] if last else self._initial
        self._last = (now, value)
        return value


class ReputationGate:
    """What one send may do now (``emailops.core.ports.ReputationGate``), from the shared state
    re-read at most every ``refresh`` seconds. Redis unreachable: mail flows (logged), because a
    guard that stops password resets when Redis blinks would be worse than no guard."""

    def __init__(
        self,
        state: ReputationState,
        *,
        refresh: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.state = state
        self._in_force: _Refreshed[list[dict[str, Any]]] = _Refreshed(
            state.entries,
            initial=[],
            event="reputation.state_unavailable",
            refresh=refresh,
            clock=clock,
        )

    def decide(self, *, priority: str, organization: str | None) -> tuple[GateDecision, str]:
        level = parse_priority(priority)
        if level is Priority.CRITICAL:
            return GateDecision.GO, ""
        decision, reason = GateDecision.GO, ""
        for entry in self._in_force():
            if entry.get("priority") != level.value:
                continue
            if entry.get("organization") not in (None, organization):
                continue
            if entry.get("mode") == "pause":
                return GateDecision.PAUSE, entry.get("reason", "")
            decision, reason = GateDecision.SLOW, entry.get("reason", "")
        return decision, reason


class SendStop:
    """The emergency stop as each consumer sees it (``emailops.core.ports.SendSwitch``), re-read
    at most every ``refresh`` seconds. Redis unreachable: the last answer stands, so a stop stays a
    stop through a blink, and a blink never starts one."""

    def __init__(
        self,
        state: ReputationState,
        *,
        refresh: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.state = state
        self._reason = _Refreshed(
            self._read,
            initial=None,
            event="send_stop.state_unavailable",
            refresh=refresh,
            clock=clock,
        )

    def stop_reason(self) -> str | None:
        return self._reason()

    def _read(self) -> str | None:
        entry = self.state.stop()
        return f"{entry.get('reason', '')} (by {entry.get('by', '?')})" if entry else None
