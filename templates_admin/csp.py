"""The strict Content-Security-Policy of every console page that shows a rendered email.

Every response gets the baseline policy from ``emailops.security.ContentSecurityPolicyMiddleware``;
these pages tighten it. The preview and the journal's "view email" show template HTML in a
sandboxed ``srcdoc`` iframe, which inherits this policy, so even a template that slipped a script
past the sandbox could not run it, load anything remote (no tracking pixel fires from a support
desk) or post a form out. 'unsafe-inline' styles are for the emails, whose CSS is inline by nature.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from emailops.security import BASE_POLICY, EMAIL_POLICY

POLICY = EMAIL_POLICY
# A page that polls its own JSON endpoint (a job's progress bar) also needs to fetch from 'self'.
POLLING_POLICY = BASE_POLICY


def strict_csp(
    view: Callable[..., HttpResponse], *, policy: str = POLICY
) -> Callable[..., HttpResponse]:
    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        response = view(request, *args, **kwargs)
        response["Content-Security-Policy"] = policy
        return response

    return wrapped
