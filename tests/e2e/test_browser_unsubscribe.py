"""The public unsubscribe page in Debian's chromium: its language, its labels, Undo, and a small
accessibility check of our own (axe-core is not available offline): every control has an
accessible name, every text is at least 4.5:1 against its background (WCAG AA)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from emailops.core.preferences import Preference
from emailops.unsubscribe import unsubscribe_token
from tests.preferences.fakes import MemoryPreferences, install_fakes

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ADDRESS = "erin@example.com"

# Every visible element with its own text: its colour and the first opaque background behind it
# (walking up to the page), and the contrast ratio between them (WCAG 2's relative luminance).
CONTRAST = """() => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lin = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const lum = ([r, g, b]) => 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.99)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const found = [];
  for (const el of document.body.querySelectorAll("*")) {
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    const style = getComputedStyle(el);
    if (!own || style.visibility === "hidden" || style.display === "none") continue;
    const [a, b] = [lum(rgb(style.color)), lum(background(el))];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    found.push({text: el.textContent.trim().slice(0, 40), ratio});
  }
  return found;
}"""

# Every form control: how it is named (a <label for>, a wrapping label, aria-label(ledby), or
# a button's own text).
NAMES = """() => [...document.querySelectorAll("input, select, textarea, button")]
  .filter((el) => el.type !== "hidden")
  .map((el) => {
    const label = (el.id && document.querySelector(`label[for="${el.id}"]`)) || el.closest("label");
    const name = (label && label.textContent.trim()) || el.getAttribute("aria-label")
      || (el.tagName === "BUTTON" && el.textContent.trim()) || "";
    return {tag: el.tagName, type: el.type, name};
  })"""


def check_accessibility(page) -> None:
    assert page.evaluate("document.documentElement.lang").startswith("en")
    assert page.title()
    assert page.locator("h1").count() == 1
    controls = page.evaluate(NAMES)
    assert controls and all(c["name"] for c in controls), controls
    texts = page.evaluate(CONTRAST)
    assert texts
    low = [t for t in texts if t["ratio"] < 4.5]
    assert low == [], low


def test_the_page_is_accessible_and_undo_resubscribes(page, live_server, monkeypatch, screenshot):
    store = install_fakes(
        monkeypatch,
        MemoryPreferences(
            Preference(ADDRESS, "dataset-activity", False, how="one-click", at=1),
            Preference(ADDRESS, "digest", True, how="page", at=1),
            Preference(ADDRESS, "news", False, how="page", at=1),
        ),
    )
    url = live_server.url + reverse(
        "preferences:unsubscribe", args=[unsubscribe_token(ADDRESS, "dataset-activity")]
    )
    response = page.goto(url)
    assert response.status == 200
    assert "set-cookie" not in response.headers
    assert page.locator("h1").inner_text() == "You are unsubscribed from dataset-activity"
    assert page.get_by_label("digest").is_checked()
    assert not page.get_by_label("news").is_checked()
    check_accessibility(page)
    screenshot(page, "unsubscribed")

    page.get_by_role("button", name="Undo").click()
    page.wait_for_load_state()
    assert page.get_by_role("status").inner_text() == "Done: you are subscribed again."
    assert store.get(ADDRESS, "dataset-activity").subscribed is True
    assert store.get(ADDRESS, "dataset-activity").how == "page"
    check_accessibility(page)  # the notice too

    page.get_by_label("news").check()
    page.get_by_role("button", name="Save my choices").click()
    page.wait_for_load_state()
    assert store.get(ADDRESS, "news").subscribed is True
    assert page.get_by_label("news").is_checked()
    assert page.context.cookies() == []  # nothing on the page set one, at any step
    screenshot(page, "saved")


def test_a_bad_link_is_plain_and_accessible(page, live_server, monkeypatch):
    install_fakes(monkeypatch, MemoryPreferences())
    response = page.goto(f"{live_server.url}/u/not-a-token")
    assert response.status == 400
    assert page.locator("h1").inner_text() == "This link does not work"
    assert page.evaluate("document.documentElement.lang").startswith("en")
    assert page.evaluate(CONTRAST) and all(t["ratio"] >= 4.5 for t in page.evaluate(CONTRAST))
