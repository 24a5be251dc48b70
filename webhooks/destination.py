"""Where an endpoint's host resolves: the one resolver the SSRF check uses, at creation and
before every delivery (tests replace it to play a DNS change)."""

from __future__ import annotations

import socket

from emailops.core.webhook_delivery import check_destination

__all__ = ["destination_check", "resolve"]


def resolve(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def destination_check(url: str, *, allow_loopback: bool) -> list[str]:
    """The addresses to post to, or WebhookRefused (see ``check_destination``);
    ``allow_loopback``: plain http to this machine, in development only (it follows
    DJANGO_DEBUG; ``WebhooksConfig.allow_loopback``)."""
    return check_destination(
        url, resolve=resolve, allow_loopback=allow_loopback, require_https=not allow_loopback
    )
