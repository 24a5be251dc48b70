"""``/healthz``: the cheapest answer that the process serves requests (for container healthchecks
and load balancer probes). It touches no database, cache or AWS, so a dependency's outage does not
get every console container killed and restarted."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

PATH = "/healthz"


class HealthCheckMiddleware:
    """Placed first in MIDDLEWARE: probes come by IP over plain http, which ALLOWED_HOSTS and the
    HTTPS redirect would otherwise refuse."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info == PATH and request.method in ("GET", "HEAD"):
            return HttpResponse("ok\n", content_type="text/plain")
        return self.get_response(request)
