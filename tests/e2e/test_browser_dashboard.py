"""A Support user opens the console's front page in a real browser: the operations dashboard's
charts draw from the hourly counters (Chart.js served from our static files), under the strict
Content-Security-Policy, with no violation reported."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from emailops import container
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


def test_support_sees_the_dashboard_charts_drawn_with_data(
    login, make_user, aws, settings, live_server
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
    user = make_user("Support")
    page = login(user)
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
