"""The operations dashboard (the console's front page) through Django's test client: every role
sees the charts' data from the hourly counters, the worst tables link to the journal search, the
guard's banner and pauses show, Support leads set and lift a pause, and nothing reads the journal.

Counters are written with the real DynamoDB adapter (moto in-process); pauses live in the real
Redis under a key of the test's own."""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime, timedelta
from html import unescape

import pytest
import redis

from emailops import container
from monitoring.checks import READING_HISTORY_DAYS
from monitoring.models import OpsReading
from templates_admin.csp import POLICY
from templates_admin.dashboard import selectors
from templates_admin.models import ReputationPauseChange
from templates_admin.reputation import selectors as reputation
from tests.conftest import skip_or_fail

pytestmark = pytest.mark.django_db

INDEX = "/admin/"
PAUSE = "/admin/templates_admin/operationspage/pause/"


def text(response) -> str:
    return unescape(response.content.decode())


def hour(back: int = 0) -> str:
    return (datetime.now(UTC) - timedelta(hours=back)).strftime("%Y-%m-%dT%H")


@pytest.fixture
def reputation_key(settings):
    """The guard's shared state under a key of this test's own, removed afterwards."""
    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=1)
    try:
        client.ping()
    except redis.RedisError as exc:
        skip_or_fail(f"Redis is not reachable at {settings.REDIS_URL}: {exc}")
    settings.SES_RATE_REDIS_KEY = f"emailops-test-dashboard:{uuid.uuid4().hex}"
    container.reset()
    yield settings.SES_RATE_REDIS_KEY
    for key in client.scan_iter(f"{settings.SES_RATE_REDIS_KEY}*"):
        client.delete(key)


@pytest.fixture
def counters(aws, reputation_key):
    """Two hours of sends: one clean messageId, and org 367's newsletter bouncing past the act
    line (12 % hard bounces over 250 sends)."""
    stats = container.current().stats
    stats.add(
        message_id="password-reset",
        organization=None,
        hour=hour(3),
        counts={"sent": 300, "delivered": 298, "bounced_transient": 2, "rate_waits": 4},
    )
    stats.add(
        message_id="newsletter",
        organization="367",
        hour=hour(1),
        counts={
            "sent": 250,
            "delivered": 218,
            "bounced_permanent": 30,
            "bounced_transient": 2,
            "complained": 1,
            "throttles": 3,
            "failed": 1,
        },
    )
    stats.flush()  # counters are written every STATS_FLUSH_SECONDS; now, here
    return stats


@pytest.mark.parametrize("group", ["Support", "Support leads", "Template owners", None], ids=str)
def test_every_console_role_sees_the_charts_data(counters, client, make_user, group):
    user = make_user(group, superuser=group is None)
    client.force_login(user)
    response = client.get(INDEX)
    assert response.status_code == 200
    assert response["Content-Security-Policy"] == POLICY  # the charts run under the strict CSP
    page = text(response)
    assert "vendor/chartjs/chart.umd.min.js" in page and "templates_admin/dashboard.js" in page
    assert "<script>" not in page.replace(" ", "")  # nothing inline to run

    charts = json.loads(
        page.split('id="ops-dashboard-data" type="application/json">')[1].split("</script>")[0]
    )
    assert charts == response.context["dashboard"]["charts"]
    assert len(charts["hours"]) == 7 * 24 and charts["hours"][-1] == hour(0)
    assert sum(charts["sends"]["sent"]) == 550
    assert sum(charts["sends"]["outcomes"]["delivered"]) == 516
    assert sum(charts["sends"]["outcomes"]["bounced_permanent"]) == 30
    assert charts["sends"]["sent"][charts["hours"].index(hour(1))] == 250
    assert (
        sum(charts["throttles"]["throttles"]) == 3 and sum(charts["throttles"]["rate_waits"]) == 4
    )
    # Rolling 24 h at the last hour: 30 hard bounces of 550 delivered-or-bounced sends.
    assert charts["rates"]["bounce"][-1] == round(100 * 30 / 550, 1) == 5.5
    assert charts["rates"]["complaint"][-1] == round(100 * 1 / 516, 1) == 0.2
    assert charts["rates"]["bounce"][0] is None  # nothing sent in that window: a gap, not 0 %
    assert charts["lines"] == {
        "review": {"bounce": 0.05, "complaint": 0.001},
        "pause": {"bounce": 0.10, "complaint": 0.005},
        "gmail": {"complaint": 0.003},  # Gmail's and Yahoo's bulk-sender line
    }

    worst = response.context["dashboard"]["worst_message_ids"]
    assert [row["name"] for row in worst] == ["newsletter", "password-reset"]
    assert worst[0]["state"] == "act" and worst[0]["bounce_percent"] == 12.0
    assert "message_id=newsletter" in worst[0]["journal_url"]
    assert [row["name"] for row in response.context["dashboard"]["worst_organizations"]] == ["367"]
    assert 'id="reputation-banner"' in page and "Act: organization 367" in page
    # The account's table: the same numbers as the charts' latest points, one decimal.
    figures = response.context["dashboard"]["figures"]
    assert figures["bounce_percent"] == charts["rates"]["bounce"][-1]
    assert '<td data-figure="bounce_percent">5.5 %</td>' in page
    assert '<td data-figure="complaint_percent">0.2 %</td>' in page
    assert "30 hard bounces, 1 complaint " in " ".join(page.split())
    can_pause = group in ("Support leads", None)
    assert ('id="reputation-pause-form"' in page) is can_pause
    # The Pause and Emergency stop forms each have their own ids (both had id_action, id_reason).
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert sorted({i for i in ids if ids.count(i) > 1}) == []


def test_staff_without_a_console_role_gets_the_plain_index(counters, client, make_user):
    client.force_login(make_user(None))
    response = client.get(INDEX)
    assert response.status_code == 200
    assert "dashboard" not in response.context and "ops-dashboard-data" not in text(response)


def test_the_worst_tables_link_to_a_journal_search_with_the_filters_filled(
    counters, client, make_user
):
    client.force_login(make_user("Support"))
    row = client.get(INDEX).context["dashboard"]["worst_message_ids"][0]
    assert row["journal_url"].startswith("/admin/templates_admin/emailjournalpage/?")
    search = client.get(row["journal_url"])
    assert search.status_code == 200
    form = search.context["form"]
    assert form["message_id"].value() == "newsletter" and form["delivery"].value() == "BOUNCED"


def test_the_dashboard_never_reads_the_journal(counters, client, make_user, monkeypatch, settings):
    """Every AWS client the request builds records its calls; the journal's adapters raise."""

    def journal_read(*args, **kwargs):
        raise AssertionError("the dashboard read the journal")

    for factory in ("journal", "journal_scan", "journal_search", "event_journal"):
        monkeypatch.setattr(container.Container, factory, property(journal_read))
    calls: list[tuple[str, str, str]] = []
    from emailops.aws.clients import AwsClients

    build = AwsClients.client

    def recording_client(self, service, **kwargs):
        made = build(self, service, **kwargs)

        def record(params, model, **_):
            calls.append((service, model.name, params.get("TableName", "")))

        made.meta.events.register("provide-client-params.*.*", record)
        return made

    monkeypatch.setattr(AwsClients, "client", recording_client)
    container.reset()
    client.force_login(make_user("Support"))
    response = client.get(INDEX)

    assert (
        response.status_code == 200
        and sum(response.context["dashboard"]["charts"]["sends"]["sent"]) == 550
    )
    assert calls, "the recorder saw no AWS call at all"
    assert not [c for c in calls if c[2] == settings.JOURNAL_TABLE]
    assert not [c for c in calls if c[1] == "Scan"]
    tables = {table for _, _, table in calls if table}
    assert tables == {settings.STATS_TABLE}


def test_the_dlq_chart_reads_one_query_of_the_beat_checks_hourly_history(
    aws, client, make_user, django_assert_num_queries
):
    now = datetime.now(UTC)
    for back, depth in ((0, 4), (2, 1), (24 * 40, 9)):  # the last is outside the chart
        at = now - timedelta(hours=back)
        OpsReading.objects.create(name=f"dlq_depth@{at:%Y-%m-%dT%H}", value={"depth": depth}, at=at)
    hours = selectors.hour_labels(now=now, hours=7 * 24)
    with django_assert_num_queries(1):
        history = selectors.dlq_depth_history(since_hour=hours[0])
    assert history == {hour(0): 4, hour(2): 1}


def test_the_beat_check_keeps_the_deepest_reading_per_hour_and_prunes_old_hours(aws, settings):
    from monitoring import checks as monitoring

    old = datetime.now(UTC) - timedelta(days=READING_HISTORY_DAYS + 1)
    OpsReading.objects.create(name=f"dlq_depth@{old:%Y-%m-%dT%H}", value={"depth": 7}, at=old)
    for body in ("a", "b"):
        aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=body)
    monitoring.dead_letter_depth_check(queue=container.current().queue)
    aws.sqs.purge_queue(QueueUrl=aws.dlq_url)
    monitoring.dead_letter_depth_check(
        queue=container.current().queue
    )  # 0 now; the hour keeps its 2

    history = OpsReading.objects.filter(name__startswith="dlq_depth@")
    assert {r.name: r.value["depth"] for r in history} == {f"dlq_depth@{hour(0)}": 2}
    assert OpsReading.objects.get(name="dlq_depth").value["depth"] == 0


def test_rolling_rates_are_judged_over_the_window_not_per_hour():
    hours = ["2026-12-01T10", "2026-12-01T11", "2026-12-01T12"]
    counts = {
        "2026-12-01T09": {"delivered": 90, "bounced_permanent": 10},
        "2026-12-01T11": {"delivered": 1, "bounced_permanent": 1, "complained": 1},
    }
    rates = selectors._rolling_rates(hours, counts, window=2)
    assert rates["bounce"] == [10.0, 50.0, 50.0]  # 10:00 still sees 09:00; 12:00 sees 11:00
    assert rates["complaint"] == [0.0, 100.0, 100.0]
    assert rates["delivery"] == [90.0, 50.0, 50.0]
    assert selectors._rolling_rates(hours, {}, window=2)["bounce"] == [None, None, None]


def test_a_support_lead_pauses_and_resumes_bulk_mail_with_a_reason(counters, client, make_user):
    lead = make_user("Support leads")
    client.force_login(lead)
    response = client.post(
        PAUSE,
        {"action": "set", "priority": "bulk", "organization": "367", "reason": "bad list"},
        follow=True,
    )
    assert response.status_code == 200
    assert "Bulk mail paused (organization 367)" in text(response)
    assert [
        (p["priority"], p["organization"], p["reason"])
        for p in reputation.pauses(reputation_state=container.current().reputation_state)
    ] == [("bulk", "367", "bad list")]
    assert response.context["dashboard"]["pauses"][0]["reason"] == "bad list"
    assert 'class="reputation-pause"' in text(response)

    response = client.post(
        PAUSE,
        {"action": "lift", "priority": "bulk", "organization": "367", "reason": "list cleaned"},
        follow=True,
    )
    assert "Bulk mail resumed (organization 367)" in text(response)
    assert reputation.pauses(reputation_state=container.current().reputation_state) == []
    assert 'id="reputation-no-pauses"' in text(response)
    trail = ReputationPauseChange.objects.order_by("at", "id")
    assert [(c.action, c.reason, c.user) for c in trail] == [
        ("pause", "bad list", lead),
        ("resume", "list cleaned", lead),
    ]


def test_pausing_needs_a_lead_a_reason_and_never_touches_critical_mail(counters, client, make_user):
    client.force_login(make_user("Support"))
    form = {"action": "set", "priority": "bulk", "organization": "", "reason": "x"}
    assert client.post(PAUSE, form).status_code == 403
    client.force_login(make_user("Template owners"))
    assert client.post(PAUSE, form).status_code == 403

    client.force_login(make_user("Support leads"))
    assert client.get(PAUSE).status_code == 405
    no_reason = client.post(PAUSE, {**form, "reason": ""}, follow=True)
    assert "Pause not changed: reason" in text(no_reason)
    critical = client.post(PAUSE, {**form, "priority": "critical"}, follow=True)
    assert "Pause not changed: priority" in text(critical)
    assert (
        reputation.pauses(reputation_state=container.current().reputation_state) == []
        and not ReputationPauseChange.objects.exists()
    )


def test_the_front_page_renders_when_redis_and_ses_are_down(counters, client, make_user, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    container.reset()
    client.force_login(make_user("Support"))
    response = client.get(INDEX)
    assert response.status_code == 200
    dashboard = response.context["dashboard"]
    assert sum(dashboard["charts"]["sends"]["sent"]) == 550  # the counters still show
    assert any(problem.startswith("pauses:") for problem in dashboard["problems"])
    assert "Not available: pauses" in text(response)


def test_the_dlq_chart_shows_the_banners_reading_in_its_hour(aws, client, make_user):
    """The banner reads the last reading (``dlq_depth``); the chart's current hour never shows
    less, even before the hourly history has one."""
    OpsReading.objects.create(name="dlq_depth", value={"depth": 1}, at=datetime.now(UTC))
    client.force_login(make_user("Support"))

    page = client.get(INDEX)

    charts = page.context["dashboard"]["charts"]
    assert charts["dlq"][-1] == 1 and charts["dlq_now"] == 1
    assert "1 request on the dead-letter queue" in text(page)
    assert '<td data-figure="dlq_now">1</td>' in text(page)


def test_one_of_each_is_worded_in_the_singular(aws, reputation_key, client, make_user):
    stats = container.current().stats
    counts = {"sent": 4, "delivered": 3, "bounced_permanent": 1, "complained": 1}
    stats.add(message_id="welcome", organization=None, hour=hour(0), counts=counts)
    stats.flush()
    client.force_login(make_user("Support"))

    page = " ".join(text(client.get(INDEX)).split())

    assert "4 sent, 3 delivered, 1 hard bounce, 1 complaint —" in page
    assert '<td data-figure="bounce_percent">25.0 %</td>' in page
    assert '<td data-figure="complaint_percent">33.3 %</td>' in page
    assert "33.3333" not in page


def test_unsubscribes_per_category_are_counted_beside_complaints(counters, client, make_user):
    """The public endpoint calls record_unsubscribe; the dashboard shows the window's counts."""
    from emailops.unsubscribes import record_unsubscribe
    from templates_admin.models import CategoryDefinition

    CategoryDefinition.objects.create(slug="dataset-activity", label="Activity on datasets")
    now, stats = datetime.now(UTC).timestamp(), container.current().stats
    assert record_unsubscribe("dataset-activity", stats=stats, now=now)
    assert record_unsubscribe("dataset-activity", stats=stats, now=now - 3600)
    assert record_unsubscribe("newsletter", stats=stats, now=now)
    assert record_unsubscribe("newsletter", stats=stats, now=now - 40 * 3600)  # outside 24 h
    client.force_login(make_user("Support"))
    response = client.get(INDEX)
    page = " ".join(text(response).split())
    dashboard = response.context["dashboard"]
    assert dashboard["unsubscribes"] == {
        "total": 3,
        "categories": [
            {"category": "dataset-activity", "label": "Activity on datasets", "count": 2},
            {"category": "newsletter", "label": "newsletter", "count": 1},
        ],
    }
    assert '<td data-figure="unsubscribed">3</td>' in page
    assert "1 complaint and 3 unsubscribes" in page
    table = page[page.index('id="unsubscribes-by-category"') :]
    assert "<td>Activity on datasets</td><td>2</td>" in table
    # The rates charts still read only their own counters.
    assert sum(dashboard["charts"]["sends"]["sent"]) == 550


def test_record_unsubscribe_without_a_stats_table_counts_nothing(aws, settings):
    from emailops.unsubscribes import record_unsubscribe

    settings.STATS_TABLE = ""
    container.reset()
    assert record_unsubscribe("dataset-activity", stats=container.current().stats) is False


def test_a_low_volume_state_is_explained_and_sends_without_an_organization_are_not_nothing(
    aws, reputation_key, client, make_user
):
    """At 33 % bounces the headline said "state low_volume", unexplained; "Worst organizations"
    said "Nothing sent in the window" after 10 sends without an organization."""
    stats = container.current().stats
    counts = {"sent": 10, "delivered": 6, "bounced_permanent": 3, "complained": 3}
    stats.add(message_id="welcome", organization=None, hour=hour(0), counts=counts)
    stats.flush()
    client.force_login(make_user("Support"))

    page = " ".join(text(client.get(INDEX)).split())

    assert 'state <strong id="reputation-state">low_volume</strong>: ' in page
    assert "too few sends to judge: fewer than 200 delivered or bounced in the last 24 h" in page
    assert "the guard neither warns nor pauses" in page
    assert "None of the 10 sends of the last 24 h named an organization." in page


def test_an_act_says_what_the_guard_did(counters, client, make_user):
    lead = make_user("Support leads")
    client.force_login(lead)
    page = " ".join(text(client.get(INDEX)).split())
    assert (
        "Act: organization 367</strong> — bounce rate 12.0 %, complaint rate 0.5 %: the guard "
        "pauses bulk mail and slows normal mail at its next check (within 5 minutes)." in page
    )
    assert "not one messageId." in page  # the guard judges the account and organizations

    client.post(
        PAUSE, {"action": "set", "priority": "bulk", "organization": "367", "reason": "bad list"}
    )
    page = " ".join(text(client.get(INDEX)).split())
    assert "complaint rate 0.5 %: bulk mail is paused and normal mail slowed (below)." in page


def test_the_charts_show_the_last_day_or_the_week(counters, client, make_user):
    client.force_login(make_user("Support"))

    week = client.get(INDEX)
    day = client.get(INDEX + "?range=24h")

    assert len(week.context["dashboard"]["charts"]["hours"]) == 7 * 24
    assert 'href="?range=24h"' in text(week) and "<strong>last 7 days</strong>" in text(week)
    charts = day.context["dashboard"]["charts"]
    assert len(charts["hours"]) == 24 and charts["hours"][-1] == hour(0)
    assert sum(charts["sends"]["sent"]) == 550  # both hours are within the day
    assert "<strong>last 24 h</strong>" in text(day)


def test_the_quota_chart_is_titled_by_the_quota_the_rate_and_an_over_quota_state():
    from templates_admin.dashboard.words import quota_words

    quota = {"max_24_hour_send": 200.0, "sent_last_24_hours": 268.0, "max_send_rate": 1.0}
    over = quota_words({**quota, "remaining": 0.0}, 50.0)
    assert over == {
        "title": "SES 24-hour sending quota — over quota: 268 sent of 200 allowed; sending at up "
        "to 50/s (SES_MAX_SEND_RATE; SES allows 1/s)",
        "over": True,
    }
    under = quota_words({**quota, "sent_last_24_hours": 20.0, "remaining": 180.0}, None)
    assert under["title"] == (
        "SES 24-hour sending quota — 20 of 200 sent, 180 left; sending at up to 1/s (SES's rate)"
    )
    assert not under["over"]


def test_the_stop_banner_and_the_pauses_write_their_time_as_every_page_does(
    counters, client, make_user
):
    """The stop banner and the pauses showed raw ISO ("2026-12-08T01:02:03Z")."""
    client.force_login(make_user("Support leads"))
    client.post(
        PAUSE, {"action": "set", "priority": "bulk", "organization": "", "reason": "bad list"}
    )
    client.post(
        "/admin/templates_admin/operationspage/send-stop/", {"action": "set", "reason": "x"}
    )

    page = text(client.get(INDEX))

    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", page.split('id="ops-dashboard-data"')[0])
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"
    assert re.search(rf"Emergency stop: .* since {stamp} by ", page)
    assert re.search(rf'<tr class="reputation-pause">.*<td>{stamp}</td><td>bad list</td>', page)


def test_console_time_writes_every_kind_of_moment_one_way():
    from datetime import UTC, datetime

    from templates_admin.templatetags.console_time import console_time

    moment = datetime(2026, 12, 8, 1, 2, 3, tzinfo=UTC)
    for value in (moment, "2026-12-08T01:02:03Z", "2026-12-08T01:02:03+00:00", moment.timestamp()):
        assert console_time(value) == "2026-12-08 01:02:03 UTC", value
    assert console_time("") == "" and console_time("soon") == "soon"
