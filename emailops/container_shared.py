"""The container's adapters of shared sending state: the SES send rate and the guard's reduced one
(Redis buckets), the reputation pauses and the emergency stop (Redis), the reputation counters and
the send guard's counter table (DynamoDB), the API's and the unsubscribe page's rate windows. A
mixin of ``emailops.container.Container``, which gives it ``config`` and ``client``; its own
module so that the container stays the list it is."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from emailops.aws.rate_counter import DynamoRateCounters
from emailops.aws.stats import BufferedStats, DynamoStats
from emailops.config import Config
from emailops.core.events import EventLog
from emailops.core.local_bucket import LocalBucketStore
from emailops.core.ratelimit import QuotaRate, SharedRateLimiter
from emailops.core.send_guard import OverCap, Safeguard
from emailops.redis.rate import RedisBucketStore
from emailops.redis.reputation import ReputationGate, ReputationState, SendStop

if TYPE_CHECKING:
    from emailops.aws.ses import SesSender
    from emailops.aws.ses_simulator import SimulatingSender
    from emailops.redis.token_rate import TokenRateLimiter

__all__ = ["REPUTATION_REFRESH_SECONDS", "SharedStateAdapters"]

# The guard's pauses are re-read by each consumer this often (was REPUTATION_REFRESH_SECONDS).
REPUTATION_REFRESH_SECONDS = 5.0


class SharedStateAdapters:
    # The container's: its typed settings, its SES sender and its AWS clients.
    config: Config
    sender: SesSender | SimulatingSender
    client: Callable[..., Any]

    @cached_property
    def send_rate_limiter(self) -> SharedRateLimiter:
        """The SES send rate shared by every consumer: a bucket in Redis, a per-process one while
        Redis is unreachable. SES_MAX_SEND_RATE, else GetSendQuota's MaxSendRate, read on first
        use (the consumer does at start-up, to log it) and every 5 minutes after."""
        sending = self.config.sending
        log = EventLog(logging.getLogger("emailops.ratelimit"))
        if sending.max_send_rate is not None:
            fixed = sending.max_send_rate
            log.info("ses.send_rate", max_rate=fixed, source="SES_MAX_SEND_RATE")
            max_rate: Callable[[], float] = lambda: fixed  # noqa: E731
        else:
            max_rate = QuotaRate(
                lambda: self.sender.send_quota().max_send_rate, log=log, lock=threading.Lock()
            )
        return SharedRateLimiter(
            max_rate=max_rate,
            store=RedisBucketStore.from_url(sending.redis_url, key=sending.rate_redis_key),
            fallback=LocalBucketStore(lock=threading.Lock()),
            log=log,
            lock=threading.Lock(),
            pause_seconds=sending.quota_pause_seconds,
            fallback_consumers=sending.rate_fallback_consumers,
        )

    @cached_property
    def slow_rate_limiter(self) -> SharedRateLimiter:
        """The reduced rate normal-priority mail takes a slot of while the guard acts: a second
        bucket beside the main one, at REPUTATION_SLOW_SHARE of the send rate."""
        main, sending = self.send_rate_limiter, self.config.sending
        share = self.config.reputation.slow_share
        return SharedRateLimiter(
            max_rate=lambda: main.max_rate() * share,
            store=RedisBucketStore.from_url(
                sending.redis_url, key=f"{sending.rate_redis_key}:slow"
            ),
            fallback=LocalBucketStore(lock=threading.Lock()),
            log=EventLog(logging.getLogger("emailops.ratelimit")),
            lock=threading.Lock(),
            fallback_consumers=sending.rate_fallback_consumers,
        )

    @cached_property
    def reputation_state(self) -> ReputationState:
        sending = self.config.sending
        return ReputationState.from_url(
            sending.redis_url, key=f"{sending.rate_redis_key}:reputation"
        )

    @cached_property
    def reputation_gate(self) -> ReputationGate:
        return ReputationGate(self.reputation_state, refresh=REPUTATION_REFRESH_SECONDS)

    @cached_property
    def send_stop(self) -> SendStop:
        """The console's emergency stop, seen by every consumer within the pauses' refresh."""
        return SendStop(self.reputation_state, refresh=REPUTATION_REFRESH_SECONDS)

    @cached_property
    def stats(self) -> BufferedStats | None:
        """The reputation counters, summed in memory and written every STATS_FLUSH_SECONDS (the
        consumers flush on exit); None when STATS_TABLE is empty (nothing is counted)."""
        reputation = self.config.reputation
        if not reputation.stats_table:
            return None
        log = EventLog(logging.getLogger("emailops.stats"))
        table = DynamoStats(self.client("dynamodb"), reputation.stats_table)  # kept 400 days
        return BufferedStats(
            table,
            flush_seconds=reputation.stats_flush_seconds,
            on_error=lambda exc: log.warning("stats.flush_failed", error=exc.describe()),
        )

    @cached_property
    def rate_counters(self) -> DynamoRateCounters | None:
        """The ``email-rate-counter`` table (RATE_LIMIT_TABLE); None when it is not set."""
        table = self.config.sending.rate_limit_table
        return DynamoRateCounters(self.client("dynamodb"), table) if table else None

    @cached_property
    def send_guard(self) -> Safeguard | None:
        """The rate safeguard and the loop detector (emailops.core.send_guard); None without
        RATE_LIMIT_TABLE."""
        if self.rate_counters is None:
            return None
        sending = self.config.sending
        url = self.config.reputation.alert_webhook_url
        return Safeguard(
            counters=self.rate_counters,
            global_cap=sending.send_rate_limit_per_minute,
            message_cap=sending.per_message_rate_limit_per_minute,
            over_cap=OverCap(sending.rate_safeguard_over_cap),
            hold_max_seconds=sending.rate_safeguard_hold_max_seconds,
            loop_limit=sending.loop_limit_per_hour,
            alert=_background_alert(url) if url else lambda text: None,
            lock=threading.Lock(),  # the process's reserved sends, shared by its threads
        )

    def flush_stats(self) -> None:
        """Write the counts this process still holds (a consumer's exit, after an API send)."""
        if self.stats is not None:
            self.stats.flush()

    @cached_property
    def token_rate_limiter(self) -> TokenRateLimiter:
        from emailops.redis.token_rate import KEY_PREFIX, TokenRateLimiter, connect_fail_fast

        return TokenRateLimiter(connect_fail_fast(self.config.api.redis_url), prefix=KEY_PREFIX)

    @cached_property
    def unsubscribe_rate_limiter(self) -> TokenRateLimiter:
        """The public unsubscribe page's per-minute windows (per address, per client address)."""
        from emailops.redis.token_rate import TokenRateLimiter, connect_fail_fast

        url = self.config.preferences.redis_url
        return TokenRateLimiter(connect_fail_fast(url), prefix="emailops:unsubscribe:")


def _background_alert(url: str) -> Callable[[str], None]:
    """Post an alert on its own thread: a slow webhook must not hold a send's worker."""
    from emailops.alerts import post_alert

    log = EventLog(logging.getLogger("emailops.alerts"))

    def post(text: str) -> None:
        try:
            post_alert(url, text)
        except OSError as exc:
            log.warning("alert.not_delivered", error=f"{type(exc).__name__}: {exc}")

    def alert(text: str) -> None:
        threading.Thread(target=post, args=(text,), name="alert", daemon=True).start()

    return alert
