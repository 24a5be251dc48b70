"""The seal on the consumer's queue state (``emailops.core.state_seal``), under the server's secret:
``DJANGO_SECRET_KEY`` signs, each of ``DJANGO_SECRET_KEY_FALLBACKS`` still verifies (the rotation
the unsubscribe links use too). The consumer and the console share the secret, so a release or a
redrive the console seals is honoured by every consumer."""

from __future__ import annotations

from django.conf import settings

from emailops.core.state_seal import StateSeal

__all__ = ["state_seal"]


def state_seal() -> StateSeal:
    """Built from the settings as they are now (a process reads them once; tests change them)."""
    return StateSeal([settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS])
