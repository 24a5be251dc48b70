"""The send-rate bucket against the real Redis: the Lua script, two processes sharing one bucket, and
the fall back to a per-process bucket while Redis is unreachable (and back when it returns)."""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import socket
import threading
import time

import pytest

from emailops.core.errors import DailyQuotaExceeded
from emailops.core.events import EventLog
from emailops.core.local_bucket import LocalBucketStore
from emailops.core.ratelimit import PACING, Aimd, SharedRateLimiter
from emailops.redis.rate import RedisBucketStore
from tests.support.stack import free_port

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
LOGGER = "tests.redis_rate"


@pytest.fixture
def key(redis_key):
    return redis_key


def limiter_for(store, *, rate: float = 20.0, **kwargs) -> SharedRateLimiter:
    return SharedRateLimiter(
        max_rate=lambda: rate,
        store=store,
        fallback=LocalBucketStore(lock=threading.Lock()),
        log=EventLog(logging.getLogger(LOGGER)),
        lock=threading.Lock(),
        **kwargs,
    )


def busiest_second(times: list[float]) -> int:
    times = sorted(times)
    return max(sum(1 for t in times if start <= t < start + 1) for start in times)


# --- The Lua script --------------------------------------------------------------------------------


def test_slots_are_spaced_by_the_rate_on_the_server_clock(key):
    store = RedisBucketStore.from_url(REDIS_URL, key=key)
    began = time.monotonic()
    grants = [store.reserve(rate=1, aimd=Aimd(), horizon=2.5) for _ in range(5)]
    elapsed = time.monotonic() - began  # server time that passed during the five calls
    assert [g.granted for g in grants] == [True, True, True, False, False]
    # Slot i is i seconds after the first; each wait is that, less the time gone since.
    for i, grant in enumerate(grants[:3]):
        assert i - elapsed - 0.001 <= grant.wait <= i + 0.001
    # Not granted: ask again once the next slot (3 s away) is within the horizon.
    assert 0.5 - elapsed - 0.001 <= grants[3].wait <= 0.5 + 0.001


def test_throttle_cuts_once_per_cooldown_down_to_the_floor_and_recovers(key):
    store = RedisBucketStore.from_url(REDIS_URL, key=key)
    aimd = Aimd(cooldown=60, every=0.5, step=0.25)
    assert store.throttled(aimd=aimd, floor=0.1) == 0.5
    assert store.throttled(aimd=aimd, floor=0.1) == pytest.approx(0.5, abs=0.26)  # no second cut
    deadline = time.monotonic() + 5
    factor = 0.5
    while factor < 1 and time.monotonic() < deadline:  # +0.25 every 0.5 s (computed, not stored)
        factor = store.reserve(rate=1000, aimd=aimd, horizon=10).factor
        time.sleep(0.05)
    assert factor == 1
    steep = Aimd(decrease=0.01, cooldown=0)
    assert store.throttled(aimd=steep, floor=0.1) == 0.1


def test_a_pause_is_shared_and_never_shortened(key):
    store = RedisBucketStore.from_url(REDIS_URL, key=key)
    other = RedisBucketStore.from_url(REDIS_URL, key=key)
    store.pause(30)
    store.pause(1)
    grant = other.reserve(rate=10, aimd=Aimd(), horizon=1)
    assert not grant.granted and grant.paused == pytest.approx(30, abs=0.5)
    with pytest.raises(DailyQuotaExceeded):
        limiter_for(other).acquire()


# --- Two processes, one bucket ---------------------------------------------------------------------


def _send_as_fast_as_allowed(key: str, seconds: float, ready, results) -> None:
    """One consumer process: two threads acquiring until the end; wall-clock send times."""
    limiter = limiter_for(RedisBucketStore.from_url(REDIS_URL, key=key), rate=20.0)
    times: list[float] = []
    lock = threading.Lock()
    ready.wait(timeout=60)  # both processes start together, however long each took to start
    start = time.time()

    def run() -> None:
        while time.time() < start + seconds:
            limiter.acquire()
            with lock:
                times.append(time.time())

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.put((start, limiter.backend, times))


def test_two_processes_share_one_bucket(key):
    context = multiprocessing.get_context("spawn")
    ready, results, seconds = context.Barrier(3), context.Queue(), 1.5
    processes = [
        context.Process(target=_send_as_fast_as_allowed, args=(key, seconds, ready, results))
        for _ in range(2)
    ]
    for process in processes:
        process.start()
    try:
        ready.wait(timeout=60)
        outcomes = [results.get(timeout=30) for _ in processes]
    finally:
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
    assert {backend for _, backend, _ in outcomes} == {"redis"}
    assert all(len(times) > 5 for _, _, times in outcomes)  # both really sent
    start = min(start for start, _, _ in outcomes)
    sent = sorted(t for _, _, times in outcomes for t in times if t < start + seconds)
    assert len(sent) <= 20 * seconds + 1
    assert len(sent) >= 0.8 * 20 * PACING * seconds  # the rate is used, not just respected
    assert busiest_second([t for _, _, times in outcomes for t in times]) <= 20


# --- Redis unreachable, and back -------------------------------------------------------------------


class Forwarder:
    """A TCP forwarder to Redis that can be stopped (connections cut, port closed) and restarted
    on the same port: Redis going away and coming back, as a consumer sees it."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target, self.port = target, free_port()
        self._sockets: list[socket.socket] = []
        self._server: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self.port))
        server.listen()
        server.settimeout(0.1)
        self._server = server
        self._thread = threading.Thread(target=self._accept, args=(server,), daemon=True)
        self._thread.start()

    def stop(self) -> None:
        server, self._server = self._server, None
        self._thread.join(timeout=5)
        server.close()
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self._sockets.clear()

    def _accept(self, server: socket.socket) -> None:
        while self._server is server:
            try:
                client, _ = server.accept()
            except TimeoutError:
                continue
            upstream = socket.create_connection(self.target)
            self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass


@pytest.fixture
def forwarder(key):
    import redis

    kwargs = redis.Redis.from_url(REDIS_URL).connection_pool.connection_kwargs
    forwarder = Forwarder((kwargs["host"], kwargs["port"]))
    forwarder.start()
    yield forwarder
    if forwarder._server is not None:
        forwarder.stop()


def test_a_closed_port_falls_back_at_once_and_loudly(key, caplog):
    store = RedisBucketStore.from_url(f"redis://127.0.0.1:{free_port()}/0", key=key)
    limiter = limiter_for(store, rate=1000)
    began = time.monotonic()
    limiter.acquire()
    assert time.monotonic() - began < 1  # short timeouts: no stall
    assert limiter.backend == "local"
    [alarm] = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert "event=rate_limit.backend_unreachable" in alarm and "ConnectionError" in alarm


def test_redis_going_away_and_coming_back(key, forwarder, caplog):
    import redis

    caplog.set_level(logging.INFO, logger=LOGGER)  # whatever logging config other tests left
    direct = redis.Redis.from_url(REDIS_URL)
    store = RedisBucketStore.from_url(f"redis://127.0.0.1:{forwarder.port}/0", key=key)
    limiter = limiter_for(store, rate=1000, probe_every=0.1)

    limiter.acquire()
    assert limiter.backend == "redis" and direct.hexists(key, "slot")

    forwarder.stop()
    limiter.acquire()  # still sends, on the per-process bucket
    assert limiter.backend == "local"
    assert any("event=rate_limit.backend_unreachable" in r.getMessage() for r in caplog.records)

    direct.delete(key)
    forwarder.start()
    deadline = time.monotonic() + 10
    while limiter.backend != "redis" and time.monotonic() < deadline:
        limiter.acquire()
        time.sleep(0.02)
    assert limiter.backend == "redis"
    assert direct.hexists(key, "slot")  # the shared bucket is used again
    assert any("event=rate_limit.backend_restored" in r.getMessage() for r in caplog.records)
