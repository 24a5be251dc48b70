"""Why a request, or one recipient of it, was journaled but not sent ("log-only", as the Go
service's send controls call it): stored as ``LoggedOnlyReason`` beside Go's ``LoggedOnly``,
and that cause in words (``journal_words.logged_only_words`` says them, for every reader)."""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from emailops.core.journal_row import JournalRow

__all__ = ["LogOnlyReason", "logged_only_cause", "logged_only_remedy"]


class LogOnlyReason(StrEnum):
    SERVICE_STOP = "service-stop"
    TEMPLATE_OFF = "template-off"
    SUPPRESSED = "suppressed"
    RATE_SAFEGUARD = "rate-safeguard"
    LOOP = "loop"
    UNSUBSCRIBED = "unsubscribed"  # the recipient's preference for the mapping's category


# The cause of a log-only row from its stored reason and detail (the detail each send policy
# wrote: ``emailops/core/send_guard.py``, ``policies/``): said once, with the numbers it carries.
_CAP = re.compile(r"over (\d+) per minute \(([^)]*)\)")
_HELD = re.compile(r"held (\d+) s")
_LOOP = re.compile(r"more than (\d+) requests for messageId (.+?) to this recipient")


def _cap_words(detail: str) -> str:
    cap = _CAP.search(detail)
    if not cap:
        return "the rate safeguard's cap was reached" + (f" ({detail})" if detail else "")
    counter = cap.group(2)
    which = "all email" if counter == "global" else f"messageId {counter.removeprefix('msg#')}"
    words = f"over the rate safeguard's cap of {cap.group(1)} sends a minute ({which})"
    held = _HELD.search(detail)
    if held:
        return f"{words}, held {held.group(1)} s until its hold budget ran out"
    return f"{words}, journaled log-only at once (RATE_SAFEGUARD_OVER_CAP=log-only)"


def _loop_words(detail: str) -> str:
    loop = _LOOP.search(detail)
    if not loop:
        return f"a loop: {detail.removeprefix('loop: ')}" if detail else "a loop"
    return (
        f"a loop: more than {loop.group(1)} different requests for messageId {loop.group(2)} to "
        "this recipient within one clock hour (the loop detector)"
    )


def _stop_words(detail: str) -> str:
    if detail.startswith("emergency stop"):
        why = detail.partition(":")[2].strip()
        return "the console's emergency stop was on" + (f" ({why})" if why else "")
    if "SEND_ENABLED" in detail or not detail:
        return "sending was stopped for the whole service (SEND_ENABLED=false)"
    return f"sending was stopped for the whole service ({detail})"


def _template_off_words(detail: str) -> str:
    message_id = detail.removeprefix("SendDisabled on ").strip() if detail else ""
    which = f" {message_id}" if message_id and message_id != detail else ""
    extra = f" ({detail})" if detail and not which else ""
    return f"sending is off for this template{which} (its mapping's SendDisabled){extra}"


_CAUSES: dict[str, Callable[[str], str]] = {
    "service-stop": _stop_words,
    "template-off": _template_off_words,
    "suppressed": lambda d: "the address is on the suppression list" + (f" ({d})" if d else ""),
    "rate-safeguard": _cap_words,
    "loop": _loop_words,
    # "unsubscribed from <label> on <date> (<how>)": the preference and when it was set.
    "unsubscribed": lambda d: f"the recipient {d}" if d else "the recipient unsubscribed",
}

# What the reader can do about each cause (the console's row page).
_REMEDIES = {
    "service-stop": "Once sending runs again, resend it (a Support lead).",
    "template-off": "A Template owner switches sending back on in the template mapping; then it "
    "can be resent.",
    "suppressed": "A Support lead can remove the address from the suppression list if the cause "
    "is fixed, then resend.",
    "rate-safeguard": 'If the burst was legitimate, a Support lead releases it from "Held and '
    'log-only": it is sent once, with its own dedupe key.',
    "loop": 'Once the producer is fixed, a Support lead can release it from "Held and '
    'log-only": it is sent once, with its own dedupe key.',
    "unsubscribed": "Only the recipient may ask for this category again (the address's "
    "preferences); uncategorised and critical mail is always sent.",
    "": "The Go consumer, or an emailops release before LoggedOnlyReason was recorded, wrote it: "
    "one of its send controls (SEND_ENABLED, a template's SendDisabled, the rate safeguard) kept "
    "it back, and the row does not say which.",
}


def logged_only_cause(row: JournalRow) -> str:
    """Why a log-only row (journaled, not sent) was kept back, in words, once; "" for a Go row,
    which records no reason."""
    reason, detail = row.logged_only_reason, " ".join(row.logged_only_detail.split())
    cause = _CAUSES.get(reason)
    if cause is not None:
        return cause(detail)
    return f"{reason} ({detail})" if reason and detail else reason or detail


def logged_only_remedy(reason: str) -> str:
    """What the reader can do about a log-only row of ``reason``."""
    return _REMEDIES.get(reason, f"Its reason, {reason!r}, is not one this release knows.")
