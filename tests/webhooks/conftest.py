"""A local HTTP receiver (a thread-based http.server) that records what it is sent and answers
as told; and settings for webhooks to loopback."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from emailops import container


class Receiver:
    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], str]] = []
        self.answers: list[int] = []  # statuses to answer, in order; then 200
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                with receiver.lock:
                    receiver.received.append((dict(self.headers.items()), body))
                    status = receiver.answers.pop(0) if receiver.answers else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        # A short poll: shutdown() waits for it, once per test (the default 0.5 s added up).
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.close()


@pytest.fixture
def loopback_webhooks(settings):
    settings.WEBHOOK_ALLOW_LOOPBACK = True
    container.reset()
    yield
    container.reset()


def opened(stored: str) -> str:
    """A secret as the endpoint keeps it (sealed), opened with the container's keys."""
    from webhooks.secrets import unseal

    return unseal(stored, keys=container.current().config.webhooks.secret_keys)
