"""emailops.redis's one client factory: short timeouts, and Redis's errors as core's exceptions, so
nothing above the package catches redis.RedisError."""

from __future__ import annotations

import pytest

from emailops.core.errors import SharedStateUnavailable, TransientError
from emailops.core.ratelimit import BucketUnavailable
from emailops.core.suppression_index import IndexUnavailable
from emailops.redis.client import connect, location
from emailops.redis.rate import RedisBucketStore
from emailops.redis.reputation import ReputationGate, ReputationState
from emailops.redis.suppression import RedisSuppressionIndex
from emailops.redis.token_rate import RateLimitUnavailable, TokenRateLimiter, connect_fail_fast

DEAD = "redis://127.0.0.1:1/0"  # nothing listens on port 1


def test_the_factory_gives_short_timeouts_and_names_the_server_without_its_password():
    client = connect("redis://:s3cret@10.0.0.7:6380/2", timeout=0.25, retries=0)
    kwargs = client.connection_pool.connection_kwargs
    assert (kwargs["socket_timeout"], kwargs["socket_connect_timeout"]) == (0.25, 0.25)
    assert location(client) == "10.0.0.7:6380"


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: RedisBucketStore.from_url(DEAD, key="k").pause(1), BucketUnavailable),
        (lambda: RedisSuppressionIndex.from_url(DEAD, key="k").contains("a@b.c"), IndexUnavailable),
        (lambda: ReputationState.from_url(DEAD, key="k").entries(), SharedStateUnavailable),
        (
            lambda: TokenRateLimiter(connect_fail_fast(DEAD), prefix="p:").hit("t", per_minute=5),
            RateLimitUnavailable,
        ),
    ],
    ids=["rate", "suppression", "reputation", "token-rate"],
)
def test_every_store_raises_cores_exception_for_an_unreachable_redis(call, error):
    with pytest.raises(error) as raised:
        call()
    assert isinstance(raised.value, SharedStateUnavailable)
    assert isinstance(raised.value, TransientError)  # retrying later may help
    assert "127.0.0.1:1" in str(raised.value) or error is RateLimitUnavailable


def test_the_gate_lets_mail_flow_when_the_state_is_unreachable():
    gate = ReputationGate(ReputationState.from_url(DEAD, key="k"), refresh=0)
    decision, reason = gate.decide(priority="normal", organization=None)
    assert (decision.value, reason) == ("go", "")
