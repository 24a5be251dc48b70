"""One send at the shared rate: a slot taken just before the request leaves, and SES throttling
answered by lowering the rate and trying again in place."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from emailops.core.errors import DailyQuotaExceeded, SendThrottled
from emailops.core.events import EventLog
from emailops.core.ports import OutgoingEmail, Sender, SendRateLimiter

__all__ = ["send_paced"]


class _HeldBack(Exception):
    """What ``before_send`` raised (a pause, the pipeline's _NotNow): carried out through the
    sender so it is never taken for the send's own failure, then raised again as it was."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


def send_paced(
    sender: Sender,
    email: OutgoingEmail,
    log: EventLog,
    *,
    rate: Sequence[SendRateLimiter],
    ready: Callable[[], None] = lambda: None,
    throttled: Callable[[], None] = lambda: None,
    throttle_retries: int = 3,
) -> tuple[str, float]:
    """(the provider's message id, seconds waited for slots). ``rate``: a slot of each is taken
    in turn, the shared SES rate last (it is the one SES's throttling and quota tell about); a
    policy's reduced rate (the reputation guard's) comes before it.

    The slots are taken in the sender's ``before_send``: once the request is built and signed,
    so the send reaches SES at its slot give or take the network, not the SDK's CPU time under a
    busy GIL (sends bunching at SES would put more than the rate in a second). ``ready`` runs
    before the slots are taken (a stopping consumer or a lost claim takes no slot) and again just
    before the send (the wait may have left the claim short); what it raises holds the send and
    is raised again as it was."""
    waited = 0.0
    shared = rate[-1]

    def depart() -> None:
        nonlocal waited
        try:
            ready()
            for limiter in rate:
                waited += limiter.acquire()
            ready()
        except Exception as exc:
            raise _HeldBack(exc) from exc

    for tries_left in range(throttle_retries, -1, -1):
        try:
            return sender.send(email, before_send=depart), waited
        except _HeldBack as held:
            raise held.cause from None
        except SendThrottled as exc:
            throttled()
            shared.on_throttled()
            if not tries_left:
                raise
            log.info("send.throttled", error=exc.describe())
        except DailyQuotaExceeded:
            shared.on_daily_quota_exceeded()
            raise
    raise AssertionError("unreachable")  # pragma: no cover
