"""The strict Content-Security-Policy of every console page that shows a rendered email.

The preview and the journal's "view email" show template HTML in a sandboxed ``srcdoc`` iframe,
which inherits this policy, so even a template that slipped a script past the sandbox could not run
it, load anything remote (no tracking pixel fires from a support desk) or post a form out.
The admin itself needs only its own static scripts (theme toggle, sidebar) and stylesheets;
'unsafe-inline' styles are for the emails, whose CSS is inline by nature.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

POLICY = "; ".join(
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


# A page that polls its own JSON endpoint (a job's progress bar) also needs to fetch from 'self'.
POLLING_POLICY = f"{POLICY}; connect-src 'self'"


def strict_csp(
    view: Callable[..., HttpResponse], *, policy: str = POLICY
) -> Callable[..., HttpResponse]:
    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        response = view(request, *args, **kwargs)
        response["Content-Security-Policy"] = policy
        return response

    return wrapped
