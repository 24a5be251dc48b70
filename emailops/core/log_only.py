"""Why a request, or one recipient of it, was journaled but not sent ("log-only", as the Go
service's send controls call it): stored as ``LoggedOnlyReason`` beside Go's ``LoggedOnly``."""

from __future__ import annotations

from enum import StrEnum


class LogOnlyReason(StrEnum):
    SERVICE_STOP = "service-stop"
    TEMPLATE_OFF = "template-off"
    SUPPRESSED = "suppressed"
    RATE_SAFEGUARD = "rate-safeguard"
    LOOP = "loop"
    UNSUBSCRIBED = "unsubscribed"  # the recipient's preference for the mapping's category
