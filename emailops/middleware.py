"""The web process's entry for the container: every request carries the process's container as
``request.container``, and views hand its adapters down to the selectors and services they call
(which never reach for a global). The container itself is built once per process
(``emailops.container.current``); tests that install or reset one are seen at the next request."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from emailops import container

__all__ = ["ContainerMiddleware"]


class ContainerMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.container = container.current()
        return self.get_response(request)
