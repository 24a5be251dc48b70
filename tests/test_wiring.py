"""Adapters built by the container from settings: the shared send-rate limiter, the consumer's
caches, and building without a network call."""

from __future__ import annotations

from functools import cached_property
from unittest import mock

import pytest
from django.core.exceptions import ImproperlyConfigured

from emailops import container
from emailops.config import Config
from emailops.container import Container
from emailops.redis.rate import RedisBucketStore


@pytest.fixture
def fresh(settings):
    # A changed setting gives the next current() a new container (not reset(): that would drop
    # moto's clients).
    settings.REDIS_URL = "redis://127.0.0.1:6399/3"
    settings.SES_RATE_REDIS_KEY = "emailops-test:wiring"
    return settings


def test_a_set_rate_is_used_as_it_is_with_the_redis_bucket(fresh):
    fresh.SES_MAX_SEND_RATE = "12.5"
    fresh.SES_QUOTA_PAUSE_SECONDS = 90
    limiter = container.current().send_rate_limiter
    assert limiter.max_rate() == 12.5
    assert limiter.pause_seconds == 90
    assert isinstance(limiter.store, RedisBucketStore)
    assert limiter.store.key == "emailops-test:wiring"
    kwargs = limiter.store.client.connection_pool.connection_kwargs
    assert (kwargs["port"], kwargs["db"], kwargs["socket_timeout"]) == (6399, 3, 0.5)
    assert container.current().send_rate_limiter is limiter  # one per process, until reset


def test_zero_means_no_limit(fresh):
    fresh.SES_MAX_SEND_RATE = "0"
    limiter = container.current().send_rate_limiter
    assert limiter.acquire() == 0 and limiter.backend == "redis"  # never asked Redis


@pytest.mark.parametrize("value", ["fast", "-1", "nan", "inf"])
def test_a_rate_that_is_not_a_rate_is_refused_at_start_up(fresh, value):
    fresh.SES_MAX_SEND_RATE = value
    with pytest.raises(ImproperlyConfigured, match="SES_MAX_SEND_RATE"):
        Config.from_settings()


def test_unset_reads_ses_send_quota(aws, fresh):
    fresh.SES_MAX_SEND_RATE = ""
    calls: list[dict] = []
    record = lambda params, **_: calls.append(params)  # noqa: E731
    ses = container.current().sender.client  # the sender's own client (SDK retries off)
    ses.meta.events.register("provide-client-params.ses.GetSendQuota", record)
    try:
        limiter = container.current().send_rate_limiter
        assert calls == []  # building it asks nothing
        assert limiter.max_rate() == 1.0  # moto answers with SES's sandbox rate
        assert limiter.max_rate() == 1.0
        assert len(calls) == 1  # read on first use, and not again for 5 minutes
    finally:
        ses.meta.events.unregister("provide-client-params.ses.GetSendQuota", record)


def test_the_consumers_composer_caches_mappings_and_the_consoles_does_not(aws):
    aws.load_samples()
    lookups: list[dict] = []
    record = lambda params, **_: lookups.append(params)  # noqa: E731
    aws.dynamodb.meta.events.register("provide-client-params.dynamodb.GetItem", record)
    try:
        cached = container.current().composer(cache_seconds=60)
        for _ in range(3):
            cached.mapping_for("added-to-team")
        assert len(lookups) == 1
        console = container.current().composer()
        for _ in range(3):
            console.mapping_for("added-to-team")
        assert len(lookups) == 4
    finally:
        aws.dynamodb.meta.events.unregister("provide-client-params.dynamodb.GetItem", record)


ADAPTERS = [
    name
    for part in Container.__mro__  # the container and its mixins (container_shared)
    for name, value in vars(part).items()
    if isinstance(value, cached_property | property) and not name.startswith("_")
]


def test_building_the_container_and_every_adapter_makes_no_network_call(aws_events, settings):
    """Every AWS call and Redis connection made while building raises (and is recorded)."""
    settings.SES_SIMULATE_EVENTS = True  # the simulator's topic: created on first send, not here
    settings.SES_MAX_SEND_RATE = ""  # GetSendQuota: read on first use, not here
    container.reset()
    calls: list[str] = []

    def refuse(event_name, **_):
        calls.append(event_name)
        raise AssertionError(f"network call while building: {event_name}")

    built = Container(Config.from_settings())
    clients = {built.client(s) for s in ("dynamodb", "sqs", "ses", "sns", "sesv2", "cloudwatch")}
    clients |= {built.template_store.client, built.client("ses", sdk_retries=False)}
    clients |= {built.clients.lease_client(s, region="us-east-1") for s in ("dynamodb", "sqs")}
    for client in clients:
        client.meta.events.register("before-call.*.*", refuse)
    with mock.patch("redis.connection.Connection.connect", side_effect=AssertionError("redis")):
        try:
            for name in ADAPTERS:
                getattr(built, name)
        finally:
            for client in clients:
                client.meta.events.unregister("before-call.*.*", refuse)
    assert calls == []
    assert {"journal", "sender", "send_rate_limiter", "token_rate_limiter"} <= set(ADAPTERS)
    # Every adapter took its clients from this container's: all of them were hooked above.
    assert {id(c) for c in built.clients.made()} == {id(c) for c in clients}


def test_reset_is_a_new_container_with_new_adapters(aws):
    first = container.current()
    assert container.current() is first and first.journal is first.journal
    container.reset()
    assert container.current() is not first
    assert container.current().journal is not first.journal


def test_a_changed_setting_is_seen_by_the_next_container(aws, settings):
    assert container.current().config.aws.journal_table == "email-journal"
    settings.JOURNAL_TABLE = "another-journal"
    assert container.current().journal.table == "another-journal"


def test_the_simulators_topic_is_created_on_its_first_send(aws_events, settings):
    settings.SES_SIMULATE_EVENTS = True
    sender = container.current().sender
    created: list[dict] = []
    record = lambda params, **_: created.append(params)  # noqa: E731
    sender.sns.meta.events.register("provide-client-params.sns.CreateTopic", record)
    try:
        assert created == []  # building the sender created nothing
        arn = sender.topic_arn
        assert arn.endswith(f":{settings.SES_EVENTS_TOPIC_NAME}")
        assert sender.topic_arn == arn
        assert created == [{"Name": settings.SES_EVENTS_TOPIC_NAME}]  # once
    finally:
        sender.sns.meta.events.unregister("provide-client-params.sns.CreateTopic", record)


def test_the_consumer_reads_the_send_quota_at_start_up(aws, settings, monkeypatch):
    """Building adapters asks SES nothing; the consumer's start-up does (and logs the rate)."""
    from emailops.aws.ses import SesSender
    from worker.wiring import build_consumer

    settings.SES_MAX_SEND_RATE = ""
    reads: list[float] = []
    read = SesSender.send_quota

    def counted(self):
        quota = read(self)
        reads.append(quota.max_send_rate)
        return quota

    monkeypatch.setattr(SesSender, "send_quota", counted)
    container.current().send_rate_limiter  # noqa: B018 (built: no read)
    assert reads == []
    consumer = build_consumer(
        adapters=container.current(), concurrency=1, allow_no_dead_letter_queue=True
    )
    assert reads == [1.0]  # moto's sandbox rate, read once
    assert consumer.pipeline.rate_limiter.max_rate() == 1.0 and reads == [1.0]


def test_the_lease_is_the_queues_visibility_timeout_read_once_for_the_consumer_and_readers(
    aws, settings, monkeypatch
):
    """CLAIM_LEASE_SECONDS=0: the container's LeasePolicy asks SQS when a length is first needed,
    once; the consumer's start-up (dead-letter queue, lease) shares that one read."""
    from emailops.aws.sqs import SqsQueue
    from worker.wiring import build_consumer

    settings.CLAIM_LEASE_SECONDS = 0
    describe, asked = SqsQueue.describe, []
    monkeypatch.setattr(SqsQueue, "describe", lambda self: asked.append(1) or describe(self))
    built = container.current()
    policy = built.lease_policy
    assert asked == []  # built, not read
    assert (policy.seconds, built.lease_policy.seconds) == (30, 30) and asked == [1]

    consumer = build_consumer(adapters=container.current(), concurrency=1)
    assert consumer.settings.lease_seconds == consumer.pipeline.settings.lease_seconds == 30
    assert container.current().lease_policy.seconds == 30
    assert asked == [1, 1]  # the consumer's new container: one read for the DLQ and the lease


def test_a_lease_no_queue_can_tell_is_a_clear_error(aws, settings):
    from emailops.core.errors import LeaseUnknown

    settings.CLAIM_LEASE_SECONDS, settings.EMAIL_SERVICE_QUEUE_URL = 0, ""
    with pytest.raises(LeaseUnknown, match="EMAIL_SERVICE_QUEUE_URL is not set"):
        container.current().lease_policy.stale_before(0)
    settings.EMAIL_SERVICE_QUEUE_URL = aws.queue_url + "-missing"
    with pytest.raises(LeaseUnknown, match="set CLAIM_LEASE_SECONDS"):
        container.current().lease_policy.stale_before(0)
    settings.CLAIM_LEASE_SECONDS = 45
    assert container.current().lease_policy.stale_before(100) == 55  # no queue needed


def test_a_consumers_container_pools_a_connection_per_thread(aws):
    """with_connections: a new container of the same config, whose own clients pool that many
    connections each; the process's container and its clients are as they were."""
    before = container.current()
    journal_client = before.journal.client
    built = before.with_connections(40)
    assert built is not before and built.config is before.config
    assert built.journal.client.meta.config.max_pool_connections == 40
    assert container.current() is before  # nothing installed
    assert before.journal.client is journal_client
    assert journal_client.meta.config.max_pool_connections == 10
    assert before.with_connections(40).journal.client is not built.journal.client


def test_building_a_consumer_leaves_the_processs_container_alone(aws):
    """The consumer runs on a container of its own, sized to its threads; the process's keeps
    its clients and pools (a Celery worker drains the queue in a task beside its other tasks)."""
    from worker.wiring import build_consumer

    before = container.current()
    journal_client = before.journal.client
    consumer = build_consumer(adapters=before, concurrency=4, allow_no_dead_letter_queue=True)
    assert container.current() is before and before.journal.client is journal_client
    assert journal_client.meta.config.max_pool_connections == 10
    pipeline_client = consumer.pipeline.journal.client
    assert pipeline_client is not journal_client
    assert pipeline_client.meta.config.max_pool_connections == 2 * 4 + 8


def test_the_pipeline_reads_preferences_through_the_containers_cache_and_encrypted_links(
    aws, settings
):
    from emailops.core.policies.unsubscribed import Unsubscribed
    from emailops.core.preference_cache import CachedPreferenceStore
    from emailops.unsubscribe import EncryptedUnsubscribeLinks, read_token

    built = container.current()
    pipeline = built.build_pipeline(lease_seconds=30)
    [policy] = [p for p in pipeline.policies if isinstance(p, Unsubscribed)]
    assert policy.preferences is built.cached_preference_store
    assert isinstance(policy.preferences, CachedPreferenceStore)
    assert policy.preferences.store is built.preference_store
    assert policy.preferences.seconds == 5  # PREFERENCES_CACHE_SECONDS's default
    again = built.build_pipeline(lease_seconds=30).policies
    assert [p.preferences for p in again if isinstance(p, Unsubscribed)] == [policy.preferences]
    assert isinstance(pipeline.unsubscribe_links, EncryptedUnsubscribeLinks)
    assert pipeline.unsubscribe_links is built.unsubscribe_links
    assert (
        built.unsubscribe_links.url(address="a@x.org", category="news", organization=None) is None
    )
    settings.PUBLIC_BASE_URL = "https://emails.example.org"
    container.reset()
    url = container.current().unsubscribe_links.url(
        address="A@x.org", category="news", organization=None
    )
    assert url.startswith("https://emails.example.org/u/")
    assert read_token(url.rsplit("/", 1)[1]) == ("a@x.org", "news")
