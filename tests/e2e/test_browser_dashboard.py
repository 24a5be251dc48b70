"""A Support user opens the console's front page in a real browser: the operations dashboard's
charts draw from the hourly counters (Chart.js served from our static files), under the strict
Content-Security-Policy, with no violation reported; each chart's data points are the numbers
the account's table prints, and the dashboard uses the screen's width."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from emailops import container
from monitoring.models import OpsReading
from templates_admin.csp import POLICY

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHART_IDS = [
    "chart-sends",
    "chart-bounce",
    "chart-complaint",
    "chart-dlq",
    "chart-throttles",
]

# Reports every CSP violation the page sees, before any of its scripts run.
WATCH_CSP = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__cspViolations.push(e.violatedDirective + " " + e.blockedURI);
});
"""

# How many pixels of a canvas are not transparent: a chart that drew has thousands.
DRAWN_PIXELS = """
(id) => {
  const canvas = document.getElementById(id);
  const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let drawn = 0;
  for (let i = 3; i < pixels.length; i += 4) { if (pixels[i] !== 0) { drawn += 1; } }
  return drawn;
}
"""


# Each chart's datasets as Chart.js holds them: label, type and data.
CHART_DATA = """() => Object.fromEntries(Object.values(window.Chart.instances).map((c) => [
  c.canvas.id,
  c.data.datasets.map((d) => ({label: d.label, type: d.type || c.config.type, data: d.data})),
]))"""

# Table header cells whose text wraps onto a second line (a word broken: "SEN T").
WRAPPED_HEADERS = """() => Array.from(document.querySelectorAll("#ops-dashboard th")).filter((th) => {
  const style = getComputedStyle(th);
  const line = parseFloat(style.lineHeight) || parseFloat(style.fontSize) * 1.4;
  const padding = parseFloat(style.paddingTop) + parseFloat(style.paddingBottom);
  return th.getBoundingClientRect().height - padding > line * 1.5;
}).map((th) => th.textContent)"""


def _figure(page, name: str) -> str:
    return page.locator(f'#account-figures td[data-figure="{name}"]').inner_text()


def _dataset(charts: dict, chart_id: str, label: str) -> dict:
    return next(d for d in charts[chart_id] if d["label"] == label)


def test_support_sees_the_dashboard_charts_drawn_with_data(
    login, make_user, aws, settings, live_server, screenshot
):
    settings.SES_RATE_REDIS_KEY = f"emailops-test-dashboard:{uuid.uuid4().hex}"
    container.reset()
    now = datetime.now(UTC)
    stats = container.current().stats
    for back in range(0, 48, 3):
        stats.add(
            message_id="newsletter",
            organization="367",
            hour=(now - timedelta(hours=back)).strftime("%Y-%m-%dT%H"),
            counts={
                "sent": 100 + back,
                "delivered": 90,
                "bounced_permanent": 6,
                "bounced_transient": 2,
                "complained": 1,
                "throttles": back % 4,
                "rate_waits": 3,
            },
        )
    stats.flush()  # counters are written every STATS_FLUSH_SECONDS; now, here
    OpsReading.objects.create(name="dlq_depth", value={"depth": 1}, at=now)  # the banner's
    user = make_user("Support")
    page = login(user)
    page.set_viewport_size({"width": 1366, "height": 900})
    page.add_init_script(WATCH_CSP)
    console_errors: list[str] = []
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
    response = page.goto(f"{live_server.url}/admin/")
    assert response.status == 200 and response.headers["content-security-policy"] == POLICY

    page.wait_for_function("() => window.Chart && Object.keys(window.Chart.instances).length >= 5")
    charts = page.evaluate(
        """() => Object.values(window.Chart.instances).map((c) => ({
            id: c.canvas.id,
            points: c.data.datasets.reduce((n, d) => n + d.data.filter((v) => v).length, 0),
        }))"""
    )
    drawn = {chart["id"]: chart["points"] for chart in charts}
    assert set(CHART_IDS) <= set(drawn)
    for chart_id in ("chart-sends", "chart-bounce", "chart-complaint", "chart-throttles"):
        assert drawn[chart_id] > 0, chart_id
        assert page.evaluate(DRAWN_PIXELS, chart_id) > 1000, chart_id
    assert page.locator("#worst-message-ids a", has_text="newsletter").count() == 1
    assert "Act: organization 367" in page.locator("#reputation-banner").inner_text()
    assert page.locator("#reputation-pause-form").count() == 0  # Support cannot pause
    assert page.evaluate("() => window.__cspViolations") == []
    assert [e for e in console_errors if "Content Security" in e] == []

    # Every chart draws the table's numbers: the latest point is the window's figure.
    charts = page.evaluate(CHART_DATA)
    rates = {
        "bounce_percent": _dataset(charts, "chart-bounce", "bounce rate %"),
        "delivery_percent": _dataset(charts, "chart-bounce", "delivery rate %"),
        "complaint_percent": _dataset(charts, "chart-complaint", "complaint rate %"),
    }
    # The complaint chart's lines: SES's review and pause, and Gmail's bulk-sender 0.3 % between.
    assert [d["label"] for d in charts["chart-complaint"]] == [
        "complaint rate %",
        "SES review 0.1 %",
        "Gmail 0.3 %",
        "SES pause 0.5 %",
    ]
    assert set(_dataset(charts, "chart-complaint", "Gmail 0.3 %")["data"]) == {0.3}
    for name, dataset in rates.items():
        assert dataset["type"] == "line", name
        assert f"{dataset['data'][-1]:.1f} %" == _figure(page, name), name
        assert all(v is None or round(v, 1) == v for v in dataset["data"]), name
    window = int(settings.REPUTATION_WINDOW_HOURS)
    sent = _dataset(charts, "chart-sends", "sent (accepted by SES)")["data"]
    assert str(sum(sent[-window:])) == _figure(page, "sent")
    dead_letters = _dataset(charts, "chart-dlq", "dead letters")
    assert dead_letters["type"] == "bar" and dead_letters["data"][-1] == 1
    assert _figure(page, "dlq_now") == "1"
    expect(page.locator("#ops-banner")).to_contain_text("1 request on the dead-letter queue")
    assert page.evaluate(DRAWN_PIXELS, "chart-dlq") > 100
    summary = " ".join(page.locator("#ops-dashboard-summary").inner_text().split())
    assert "hard bounces" in summary and "33.3333" not in page.content()

    # The screen's width, in a grid of chart cards; no header breaks a word.
    width = page.evaluate("() => document.getElementById('ops-dashboard').offsetWidth")
    assert width > 1100, width
    tops = page.evaluate(
        "() => Array.from(document.querySelectorAll('.ops-chart:not(.ops-chart-wide)'))"
        ".map((f) => Math.round(f.getBoundingClientRect().top))"
    )
    assert len(set(tops)) < len(tops)  # cards sit side by side
    assert page.evaluate(WRAPPED_HEADERS) == []
    screenshot(page, "dashboard")
