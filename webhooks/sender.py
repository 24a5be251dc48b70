"""One POST to an endpoint, to the address the destination check approved (so a DNS change
between the check and the connection cannot move it), with a short timeout and no redirects."""

from __future__ import annotations

import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import urllib3

__all__ = ["PostResult", "post"]


@dataclass(frozen=True)
class PostResult:
    status: int | None  # None: timeout or connection failure
    latency_ms: int
    error: str = ""


def post(
    url: str, address: str, *, headers: dict[str, str], body: str, timeout: float
) -> PostResult:
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    host_header = parts.netloc.rpartition("@")[2]  # never user information (the check refuses it)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    options = {"timeout": urllib3.Timeout(total=timeout), "retries": False, "maxsize": 1}
    if parts.scheme == "https":
        pool = urllib3.HTTPSConnectionPool(
            address, port, server_hostname=host, assert_hostname=host, **options
        )
    else:
        pool = urllib3.HTTPConnectionPool(address, port, **options)
    started = time.monotonic()
    try:
        response = pool.urlopen(
            "POST",
            path,
            body=body.encode(),
            headers={**headers, "Host": host_header, "User-Agent": "emailops-webhooks"},
            redirect=False,
            preload_content=True,
        )
        status, error = response.status, ""
    except urllib3.exceptions.HTTPError as exc:
        status, error = None, f"{type(exc).__name__}: {exc}"[:500]
    finally:
        pool.close()
    return PostResult(status, int((time.monotonic() - started) * 1000), error)
