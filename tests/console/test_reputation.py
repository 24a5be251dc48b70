"""The reputation guard in the console's processes: audited pauses a Support lead sets and lifts,
the periodic evaluation (warn and act, per account and per organization, SES's PROBATION), and
``manage.py reputation`` — counters in moto, the shared state in the real Redis."""

from __future__ import annotations

import http.server
import json
import logging
import threading
import time
import uuid
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from emailops import container, container_shared
from emailops.core.reputation import GateDecision, hour_of
from templates_admin.models import ReputationPauseChange
from templates_admin.reputation import guard, selectors, services
from tests.conftest import skip_or_fail


class SesView:
    def __init__(self, status: str = "HEALTHY") -> None:
        self.status = status

    def view(self):
        return {"enforcement_status": self.status, "notes": []}


@pytest.fixture
def guard_env(aws, settings, monkeypatch, db):
    """A Redis key of our own (helpers and CI share the Redis), SES's view stubbed (moto has no
    sesv2 GetAccount)."""
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=1)
    try:
        client.ping()
    except redis.RedisError as exc:
        skip_or_fail(f"Redis is not reachable at {settings.REDIS_URL}: {exc}")
    key = f"emailops-test:{uuid.uuid4().hex}"
    settings.SES_RATE_REDIS_KEY = key
    monkeypatch.setattr(container_shared, "REPUTATION_REFRESH_SECONDS", 0)
    container.reset()
    ses = SesView()
    monkeypatch.setattr(container.Container, "ses_account_view", property(lambda _: ses))
    yield ses
    client.delete(f"{key}:reputation", f"{key}:slow", key)
    container.reset()


def count(message_id="welcome", organization=None, **counts):
    container.current().stats.add(
        message_id=message_id, organization=organization, hour=hour_of(time.time()), counts=counts
    )
    container.current().flush_stats()  # counters are written every STATS_FLUSH_SECONDS; now, here


def decide(priority, organization=None):
    return container.current().reputation_gate.decide(priority=priority, organization=organization)[
        0
    ]


def test_a_support_lead_pauses_and_resumes_with_a_reason_audited(guard_env, make_user):
    lead = make_user("Support leads")
    services.pause_set(
        reputation_state=container.current().reputation_state,
        priority="bulk",
        organization=None,
        reason="list cleanup",
        user=lead,
    )
    assert decide("bulk") is GateDecision.PAUSE
    assert decide("bulk", "7") is GateDecision.PAUSE  # account-wide covers every organization
    assert decide("normal") is GateDecision.GO and decide("critical") is GateDecision.GO
    [paused] = selectors.pauses(reputation_state=container.current().reputation_state)
    assert paused["priority"] == "bulk" and paused["organization"] is None
    assert paused["reason"] == "list cleanup" and paused["since"]

    services.pause_lift(
        reputation_state=container.current().reputation_state,
        priority="bulk",
        organization=None,
        reason="cleaned",
        user=lead,
    )
    assert (
        decide("bulk") is GateDecision.GO
        and selectors.pauses(reputation_state=container.current().reputation_state) == []
    )
    trail = list(
        ReputationPauseChange.objects.order_by("at", "id").values_list(
            "action", "priority", "reason", "user__username"
        )
    )
    assert trail == [
        ("pause", "bulk", "list cleanup", "support-leads"),
        ("resume", "bulk", "cleaned", "support-leads"),
    ]


def test_critical_mail_is_never_paused_and_a_reason_is_required(guard_env, make_user):
    lead = make_user("Support leads")
    with pytest.raises(ValidationError, match="never paused"):
        services.pause_set(
            reputation_state=container.current().reputation_state,
            priority="critical",
            organization=None,
            reason="x",
            user=lead,
        )
    with pytest.raises(ValidationError, match="reason"):
        services.pause_set(
            reputation_state=container.current().reputation_state,
            priority="bulk",
            organization=None,
            reason=" ",
            user=lead,
        )
    assert not ReputationPauseChange.objects.exists()


class Webhook:
    """A local HTTP endpoint that records what is POSTed to it."""

    def __init__(self) -> None:
        self.posts: list[dict] = []
        received = self.posts

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append(json.loads(body))
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"

    def close(self) -> None:
        self.server.shutdown()


@pytest.fixture
def webhook(settings):
    hook = Webhook()
    settings.ALERT_WEBHOOK_URL = hook.url
    yield hook
    hook.close()


def test_past_the_act_line_bulk_pauses_normal_slows_and_both_lift_when_rates_recover(
    guard_env, webhook, caplog
):
    count(delivered=190, bounced_permanent=10)  # 5 % of 200
    with caplog.at_level(logging.ERROR, logger="templates_admin.reputation"):
        reading = guard.reputation_evaluate(adapters=container.current())
    assert reading["acting"] == ["account"] and reading["states"]["account"] == "act"
    assert decide("bulk") is GateDecision.PAUSE
    assert decide("normal") is GateDecision.SLOW
    assert decide("critical") is GateDecision.GO
    assert any("reputation.warn" in r.getMessage() for r in caplog.records)
    [alert] = webhook.posts
    assert set(alert) == {"text"} and "bounce rate 5.00 %" in alert["text"]
    banner = selectors.reputation_banner()
    assert banner["acting"] == ["account"] and "bounce rate 5.00 %" in banner["warnings"][0]

    guard.reputation_evaluate(
        adapters=container.current()
    )  # the same warning again: no second alert
    assert len(webhook.posts) == 1

    count(delivered=2000)  # the rates recover: 10 / 2200 = 0.45 %
    guard.reputation_evaluate(adapters=container.current())
    assert decide("bulk") is GateDecision.GO and decide("normal") is GateDecision.GO
    assert selectors.reputation_banner() is None


def test_one_organizations_bad_list_pauses_only_its_own_bulk_mail(guard_env, settings):
    settings.ALERT_WEBHOOK_URL = ""
    count(organization="7", delivered=190, bounced_permanent=10)
    count(organization="8", delivered=5000)
    reading = guard.reputation_evaluate(adapters=container.current())
    assert reading["states"] == {"account": "ok", "7": "act", "8": "ok"}
    assert decide("bulk", "7") is GateDecision.PAUSE
    assert decide("bulk", "8") is GateDecision.GO and decide("bulk") is GateDecision.GO
    [paused] = selectors.pauses(reputation_state=container.current().reputation_state)
    assert paused["organization"] == "7" and paused["reason"].startswith("automatic")


def test_a_pause_lifted_by_hand_is_not_set_again_by_the_guard(guard_env, settings, make_user):
    settings.ALERT_WEBHOOK_URL = ""
    count(delivered=190, bounced_permanent=10)
    guard.reputation_evaluate(adapters=container.current())
    services.pause_lift(
        reputation_state=container.current().reputation_state,
        priority="bulk",
        organization=None,
        reason="reviewed",
        user=make_user("Support leads"),
    )
    guard.reputation_evaluate(adapters=container.current())
    assert decide("bulk") is GateDecision.GO
    assert decide("normal") is GateDecision.SLOW  # only what the person lifted


def test_ses_probation_warns_without_acting(guard_env, settings):
    settings.ALERT_WEBHOOK_URL = ""
    guard_env.status = "PROBATION"
    reading = guard.reputation_evaluate(adapters=container.current())
    assert reading["warnings"] == ["SES enforcement status is PROBATION"]
    assert reading["acting"] == [] and decide("bulk") is GateDecision.GO


def test_reputation_json_has_the_issues_keys(guard_env):
    count(message_id="reset", organization="7", sent=3, delivered=2, bounced_permanent=1)
    services.pause_set(
        reputation_state=container.current().reputation_state,
        priority="bulk",
        organization="7",
        reason="r",
        user=None,
        actor="cli:t",
    )
    out = StringIO()
    call_command("reputation", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert {"account", "message_ids", "organizations", "paused"} <= set(data)
    figures = {
        "sent",
        "delivered",
        "bounced",
        "complained",
        "bounce_rate",
        "complaint_rate",
        "state",
    }
    assert set(data["account"]) == figures
    assert data["message_ids"]["reset"] == {
        "sent": 3,
        "delivered": 2,
        "bounced": 1,
        "complained": 0,
        "bounce_rate": round(1 / 3, 6),
        "complaint_rate": 0.0,
        "state": "low_volume",
    }
    assert data["organizations"]["7"]["sent"] == 3
    [paused] = data["paused"]
    assert set(paused) == {"priority", "organization", "reason", "since"}


def test_reputation_pause_and_resume_from_the_command_line(guard_env):
    out = StringIO()
    call_command("reputation", "pause", "bulk", "--organization", "7", "--reason", "r", stdout=out)
    assert decide("bulk", "7") is GateDecision.PAUSE and "paused" in out.getvalue()
    call_command(
        "reputation", "resume", "bulk", "--organization", "7", "--reason", "ok", stdout=out
    )
    assert decide("bulk", "7") is GateDecision.GO
    assert [c.actor.startswith("cli:") for c in ReputationPauseChange.objects.all()] == [True] * 2


def test_reputation_pause_prints_its_line_without_the_logs_warning(guard_env):
    """`reputation resume` printed `ts=… level=warning … reputation.pause_lifted` before its line."""
    from emailops.logging import LogfmtFormatter

    [handler] = [
        h for h in logging.getLogger().handlers if isinstance(h.formatter, LogfmtFormatter)
    ]
    stream, out = StringIO(), StringIO()
    previous = handler.setStream(stream)
    try:
        call_command("reputation", "pause", "bulk", "--reason", "r", stdout=out)
        call_command("reputation", "resume", "bulk", "--reason", "ok", stdout=out)
    finally:
        handler.setStream(previous)
    assert out.getvalue().splitlines()[-1] == "bulk mail resumed (account)"
    assert "reputation.pause" not in stream.getvalue(), stream.getvalue()


def test_the_consumers_metrics_carry_the_guards_rates_and_pauses(guard_env, settings):
    from worker.stats import _reputation_metrics

    settings.ALERT_WEBHOOK_URL = ""
    count(delivered=190, bounced_permanent=10)
    guard.reputation_evaluate(adapters=container.current())
    state = container.current().reputation_state
    families = {
        f.name: f for f in _reputation_metrics(lambda: (state.evaluation(), state.entries()))
    }
    [bounce] = families["emailops_reputation_bounce_rate"].samples
    assert bounce.labels == {"scope": "account"} and bounce.value == 0.05
    held = {
        (s.labels["priority"], s.labels["mode"])
        for s in families["emailops_reputation_held"].samples
    }
    assert held == {("bulk", "pause"), ("normal", "slow")}
