"""Adapters built from settings: the shared send-rate limiter and the consumer's caches."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from emailops import wiring
from emailops.redis_rate import RedisBucketStore


@pytest.fixture
def fresh(settings):
    wiring.send_rate_limiter.cache_clear()  # not reset(): that would drop moto's clients
    settings.REDIS_URL = "redis://127.0.0.1:6399/3"
    settings.SES_RATE_REDIS_KEY = "emailops-test:wiring"
    yield settings
    wiring.send_rate_limiter.cache_clear()


def test_a_set_rate_is_used_as_it_is_with_the_redis_bucket(fresh):
    fresh.SES_MAX_SEND_RATE = "12.5"
    fresh.SES_QUOTA_PAUSE_SECONDS = 90
    limiter = wiring.send_rate_limiter()
    assert limiter.max_rate() == 12.5
    assert limiter.pause_seconds == 90
    assert isinstance(limiter.store, RedisBucketStore)
    assert limiter.store.key == "emailops-test:wiring"
    kwargs = limiter.store.client.connection_pool.connection_kwargs
    assert (kwargs["port"], kwargs["db"], kwargs["socket_timeout"]) == (6399, 3, 0.5)
    assert wiring.send_rate_limiter() is limiter  # one per process, until reset


def test_zero_means_no_limit(fresh):
    fresh.SES_MAX_SEND_RATE = "0"
    limiter = wiring.send_rate_limiter()
    assert limiter.acquire() == 0 and limiter.backend == "redis"  # never asked Redis


@pytest.mark.parametrize("value", ["fast", "-1", "nan", "inf"])
def test_a_rate_that_is_not_a_rate_is_refused_at_start_up(fresh, value):
    fresh.SES_MAX_SEND_RATE = value
    with pytest.raises(ImproperlyConfigured, match="SES_MAX_SEND_RATE"):
        wiring.send_rate_limiter()


def test_unset_reads_ses_send_quota(aws, fresh):
    fresh.SES_MAX_SEND_RATE = ""
    calls: list[dict] = []
    record = lambda params, **_: calls.append(params)  # noqa: E731
    ses = wiring.sender().client  # the sender's own client (SDK retries off)
    ses.meta.events.register("provide-client-params.ses.GetSendQuota", record)
    try:
        limiter = wiring.send_rate_limiter()
        assert len(calls) == 1  # read at start-up
        assert limiter.max_rate() == 1.0  # moto answers with SES's sandbox rate
        assert len(calls) == 1  # and not again for 5 minutes
    finally:
        ses.meta.events.unregister("provide-client-params.ses.GetSendQuota", record)


def test_the_consumers_composer_caches_mappings_and_the_consoles_does_not(aws):
    aws.load_samples()
    lookups: list[dict] = []
    record = lambda params, **_: lookups.append(params)  # noqa: E731
    aws.dynamodb.meta.events.register("provide-client-params.dynamodb.GetItem", record)
    try:
        cached = wiring.composer(cache_seconds=60)
        for _ in range(3):
            cached.mapping_for("added-to-team")
        assert len(lookups) == 1
        console = wiring.composer()
        for _ in range(3):
            console.mapping_for("added-to-team")
        assert len(lookups) == 4
    finally:
        aws.dynamodb.meta.events.unregister("provide-client-params.dynamodb.GetItem", record)
