"""Request-level protections every response shares: one Content-Security-Policy, and the client
address the login throttle counts by.

The CSP is the console's baseline: the admin needs only its own scripts and stylesheets (and
``connect-src 'self'`` for autocomplete, job progress and the API docs' "try it out"). A page may
set a stricter policy of its own (the pages that show a rendered email drop ``connect-src``); the
middleware then leaves it alone.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

__all__ = [
    "BASE_POLICY",
    "EMAIL_POLICY",
    "ContentSecurityPolicyMiddleware",
    "client_ip",
]

EMAIL_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self' data:",
        "frame-src 'self' about:",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
)
BASE_POLICY = f"{EMAIL_POLICY}; connect-src 'self'"


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:  # a page's own policy is stricter
            response["Content-Security-Policy"] = BASE_POLICY
        return response


def client_ip(request: HttpRequest) -> str:
    """The address a request came from, as the login throttle counts it.

    With TRUSTED_PROXY_COUNT = 0 (the default) it is the peer, REMOTE_ADDR: X-Forwarded-For is
    whatever the client wrote. Behind N trusted proxies (N >= 1; the ALB: 1), each appending the
    address it was reached from, it is the Nth entry from the right, the address the outermost
    trusted proxy saw (entries further left are the client's to invent). With fewer than N
    entries, or one that is not an IP address, it falls back to REMOTE_ADDR. Without the setting
    behind a load balancer, every login would share its address, and five failures anywhere
    would lock everyone out."""
    remote = request.META.get("REMOTE_ADDR", "")
    count = settings.TRUSTED_PROXY_COUNT
    if count <= 0:
        return remote
    forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    forwarded = [a for a in forwarded if a]
    if len(forwarded) < count:
        return remote
    try:
        return str(ipaddress.ip_address(forwarded[-count]))
    except ValueError:
        return remote
