"""The consumer's pipeline as wired from settings (moto in-process), the Redis index key set as it is
by default: on the steady path an email costs the suppression read (the table's GetItem: Go's rows
are in no index of ours), claim, send and mark; a suppression added by the events consumer's path
stops the next send."""

from __future__ import annotations

import json
import uuid
from collections import Counter

import pytest

from emailops import container
from emailops.core.pipeline import Action
from emailops.core.ports import TemplateMapping
from tests.test_redis_suppression import REDIS_URL


def body(address: str) -> str:
    return json.dumps(
        {
            "messageId": "added-to-team",
            "recipients": [{"email": address}],
            "context": {"teamName": "Team", "administrator": "Ada"},
        }
    )


@pytest.fixture
def pipeline(aws, settings):
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.RedisError as exc:
        pytest.skip(f"Redis is not reachable at {REDIS_URL}: {exc}")
    key = f"emailops-test:{uuid.uuid4().hex}:suppressed"
    settings.SUPPRESSION_INDEX_REDIS_KEY = key
    settings.TEMPLATE_CACHE_SECONDS = 60
    settings.STATS_FLUSH_SECONDS = 60  # as consumers run: counters summed, written in bulk
    container.reset()
    container.current().mapping_store.save_mapping(
        TemplateMapping("added-to-team", "added-to-team.html", "Welcome to {{.teamName}}"),
        expected_version=None,
    )
    container.current().template_store.write_template(
        "default/added-to-team.html", "<p>{{.teamName}}</p>"
    )
    yield container.current().build_pipeline(lease_seconds=30)
    redis.Redis.from_url(REDIS_URL).delete(key, f"{key}:epoch")


def count_calls(settings) -> tuple[Counter, Counter, Counter]:
    """(calls of the send path, calls to the reputation counters' table, calls of the send
    guard), by operation."""
    send_path: Counter = Counter()
    counters: Counter = Counter()
    guard: Counter = Counter()

    def count(params: dict, model, **_) -> None:
        if params.get("TableName") == settings.STATS_TABLE:
            counters[model.name] += 1
        elif params.get("TableName") == settings.RATE_LIMIT_TABLE:
            guard[model.name] += 1
        else:
            send_path[model.name] += 1

    for service, retries in (("dynamodb", True), ("ses", False)):
        client = container.current().client(service, sdk_retries=retries)  # the pipeline's
        client.meta.events.register("provide-client-params.*.*", count)
    return send_path, counters, guard


def test_an_email_costs_four_aws_calls(pipeline, settings):
    assert pipeline.process(body("warm@example.com")).action is Action.DELETE  # caches, indexes
    send_path, counters, guard = count_calls(settings)
    for i in range(3):
        assert pipeline.process(body(f"user{i}@example.com")).sent == 1
    assert sum(send_path.values()) == 12, send_path  # suppression, claim, send, mark
    assert send_path["GetItem"] == 3, send_path  # one a normalised address (two otherwise)
    # The reputation counters cost no call per email: summed in memory, one ADD per scope and
    # hour when flushed (every STATS_FLUSH_SECONDS, and when a consumer stops).
    assert counters == Counter(), counters
    # The send guard: the loop detector's count per email. Go's two rate counters (global,
    # messageId) are reserved in blocks: the warm-up email took this window's, so none here.
    assert guard == Counter({"UpdateItem": 3}), guard
    container.current().flush_stats()
    assert counters == Counter({"UpdateItem": 2}), counters  # the account's and the messageId's


def test_a_new_suppression_stops_the_next_send(aws, pipeline):
    pipeline.process(body("warm@example.com"))
    container.current().suppression_list.add(
        "bob@example.com", reason="BOUNCE", detail="550", source="ses-1", now=1
    )
    outcome = pipeline.process(body("bob@example.com"))
    assert (outcome.action, outcome.sent) == (Action.DELETE, 0)
    assert aws.sent_emails()[-1].destinations["ToAddresses"] != ["bob@example.com"]
