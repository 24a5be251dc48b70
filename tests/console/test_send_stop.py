"""The console's emergency stop: a Support lead stops all sending with a reason (audited); every
page says so while it is on; every consumer journals each request log-only within the refresh;
lifting it resumes sending."""

from __future__ import annotations

import pytest
from django.urls import reverse

from emailops import container
from emailops.redis.reputation import SendStop
from templates_admin.models import ReputationPauseChange
from tests.console.test_reputation import guard_env  # noqa: F401 (a fixture)
from tests.core.test_pipeline import Stack, request_body

pytestmark = pytest.mark.django_db
STOP = reverse("admin:templates_admin_dashboard_send_stop")
JOURNAL = "/admin/templates_admin/emailjournalpage/"


@pytest.fixture
def lead(client, make_user, guard_env):  # noqa: F811
    client.force_login(make_user("Support leads"))
    return client


def test_a_support_lead_stops_all_sending_audited_and_every_page_says_so(lead):
    answer = lead.post(STOP, {"action": "set", "reason": "runaway producer"}, follow=True)
    assert "Every consumer sees it within" in answer.content.decode()

    page = lead.get(JOURNAL).content.decode()
    assert 'id="send-stop-banner"' in page and "runaway producer" in page
    assert "runaway producer" in container.current().send_stop.stop_reason()
    change = ReputationPauseChange.objects.get()
    assert (change.action, change.priority, change.reason) == ("pause", "all", "runaway producer")

    lead.post(STOP, {"action": "lift", "reason": "fixed"})
    assert 'id="send-stop-banner"' not in lead.get(JOURNAL).content.decode()
    assert container.current().send_stop.stop_reason() is None


def test_a_consumer_under_the_stop_journals_log_only_and_sends_nothing(lead):
    lead.post(STOP, {"action": "set", "reason": "incident 42"})
    stack = Stack()
    stack.use(send_switch=container.current().send_stop)
    body = request_body(datasetName="D")

    stack.process(body)

    row = stack.row(body, "alice@example.com")
    assert row["LoggedOnly"] is True and row["LoggedOnlyReason"] == "service-stop"
    assert "incident 42" in row["LoggedOnlyDetail"] and stack.sender.sent == []


def test_consumers_see_a_change_within_the_refresh_and_keep_it_through_a_redis_blink(lead):
    now = [1000.0]
    seen = SendStop(container.current().reputation_state, refresh=5, clock=lambda: now[0])
    assert seen.stop_reason() is None
    lead.post(STOP, {"action": "set", "reason": "incident"})
    assert seen.stop_reason() is None  # within the refresh: the last reading
    now[0] += 5
    assert "incident" in seen.stop_reason()

    class Down:
        def stop(self):
            from emailops.core.errors import SharedStateUnavailable

            raise SharedStateUnavailable("read the emergency stop", reason="unreachable")

    seen.state, now[0] = Down(), now[0] + 5
    assert "incident" in seen.stop_reason()  # a blink never lifts a stop


def test_support_may_not_stop_sending(client, make_user, guard_env):  # noqa: F811
    client.force_login(make_user("Support"))
    assert client.post(STOP, {"action": "set", "reason": "x"}).status_code == 403
    assert container.current().send_stop.stop_reason() is None
