"""What every console page shows: the emergency stop while it is on."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from emailops.core.errors import SharedStateUnavailable


def send_stop(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or not user.is_staff:
        return {}
    try:
        return {"send_stop": request.container.reputation_state.stop()}
    except SharedStateUnavailable:  # a page renders without Redis; the consumers keep their last
        return {}
