"""No cookie on the public unsubscribe pages' responses.

The session, CSRF and messages middleware set none on their own for a request that carries none
and touches nothing, but the console's sessions are saved on every request
(SESSION_SAVE_EVERY_REQUEST): a signed-in operator opening an unsubscribe link would get their
session cookie back, and a page that set one would be a page that tracks. This middleware sits
before those three in MIDDLEWARE, so it sees their cookies last and drops them for views marked
``cookieless``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse

__all__ = ["CookielessMiddleware", "cookieless"]

_MARK = "_emailops_cookieless"


def cookieless(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Mark a view's responses as carrying no Set-Cookie (CookielessMiddleware removes them)."""

    @wraps(view)
    def marked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        setattr(request, _MARK, True)
        return view(request, *args, **kwargs)

    return marked


class CookielessMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if getattr(request, _MARK, False):
            response.cookies.clear()
        return response
