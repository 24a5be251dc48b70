"""Every console page, as each of its people (an admin, Support, a Support lead, a Template owner),
in one real browser: the page walk follows every link a person can see under /admin/ (one page
per URL shape: ids and query values left out) and fails on what a newcomer trips over:

- two elements with one id (a label then focuses another form's field: the dashboard's Pause and
  Emergency stop forms shared ``id_action``/``id_reason``);
- a form control without a label (``<label for>``, a wrapping label, ``aria-label``, ``title``);
- a raw ISO time in the page's text (the console writes "2026-12-08 01:02:03 UTC"; raw data in
  ``<pre>``/``<code>`` is the stored value and may keep its form);
- a link that leads to the "Not open to you" page;
- a page without the console's navigation (the header and the breadcrumbs);
- a toolbar button covered by another element (a row's buttons wrapped into the heading).
"""

from __future__ import annotations

import re
from collections import deque
from urllib.parse import urlsplit

import pytest

from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROLES = (None, "Support", "Support leads", "Template owners")  # None: the admin
MAX_PAGES = 80  # per role: a bound, not a target (a new page type raises it)
# Not pages: downloads, signing out, the API's documents, Django's own JavaScript catalogue.
SKIP = re.compile(r"/logout/|/jsi18n/|\.csv|/export|/download|/static/|/password_change/")
# Django's own apps' pages (users, groups, the login log): only whether a link there opens.
STOCK = re.compile(r"^/admin/(auth|axes)/")
VERSION_LINK = "journal-template-version-link"

INSPECT = r"""() => {
  const counts = {};
  for (const el of document.querySelectorAll('[id]')) counts[el.id] = (counts[el.id] || 0) + 1;
  const duplicates = Object.keys(counts).filter((id) => counts[id] > 1);
  const unlabelled = [];
  for (const el of document.querySelectorAll('input, select, textarea')) {
    const type = (el.getAttribute('type') || '').toLowerCase();
    if (['hidden', 'submit', 'button', 'reset', 'image'].includes(type)) continue;
    if (!el.getClientRects().length) continue;  // not shown: Django's hidden username field
    if (el.closest('fieldset') && el.closest('fieldset').querySelector('legend')) continue;
    if (el.closest('p.datetime')) continue;  // Django's split widget: "Date:" and "Time:" in words
    if ((el.labels && el.labels.length) || el.getAttribute('aria-label')
        || el.getAttribute('aria-labelledby') || el.getAttribute('title')) continue;
    unlabelled.push(el.name || el.id || el.outerHTML.slice(0, 80));
  }
  const iso = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const pattern = /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/;
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (node.parentElement.closest('pre, code, textarea, script, style, template')) continue;
    if (pattern.test(node.nodeValue)) iso.push(node.nodeValue.trim().slice(0, 100));
  }
  const covered = [];  // a toolbar button under another element (wrapped into the heading)
  for (const a of document.querySelectorAll('.object-tools a')) {
    const box = a.getBoundingClientRect();
    if (!box.width) continue;
    const top = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
    if (top && !a.contains(top) && !top.contains(a)) covered.push(a.innerText.trim().slice(0, 40));
  }
  const links = [...document.querySelectorAll('a[href]')].map((a) => ({
    href: a.href, text: a.innerText.trim().slice(0, 60), id: a.id,
  }));
  return {
    duplicates, unlabelled, iso, links, covered,
    header: !!document.querySelector('#header #site-name'),
    breadcrumbs: !!document.querySelector('.breadcrumbs'),
    refused: !!document.querySelector('#console-refused'),
  };
}"""


@pytest.fixture
def console(aws, settings, redis_key):
    """Something on every page: sample templates and mappings, a bounced row, a row that
    recorded its template version, a dead letter seen by beat, a pause and the emergency stop
    (their times are on every page's banner and the dashboard)."""
    from datetime import UTC, datetime

    from emailops import container
    from monitoring.models import OpsReading
    from templates_admin.reputation import services

    aws.load_samples()
    put_rows(
        aws.dynamodb,
        "email-journal",
        [
            journal_row(
                "bounce@example.com",
                at=BASE_TIME,
                DeliveryStatus="BOUNCED",
                BounceType="Permanent",
                BounceSubType="General",
            ),
            journal_row("erin@example.com", at=BASE_TIME + 60, TemplateVersion="v-walk-1"),
        ],
    )
    OpsReading.objects.create(name="dlq_depth", value={"depth": 1}, at=datetime.now(UTC))
    settings.SES_RATE_REDIS_KEY = redis_key  # the pauses and the stop: this test's own
    container.reset()
    state = container.current().reputation_state
    services.pause_set(
        reputation_state=state, priority="bulk", organization=None, reason="walk", user=None
    )
    services.send_stop_set(reputation_state=state, reason="walk", user=None, actor="walker")


def shape(url: str) -> str:
    """A page's type: its path without ids, keys and query (Django's filter and sort links are
    the same page; the searches worth seeing are ``SEEDS``)."""
    path = urlsplit(url).path
    path = re.sub(r"/(default|custom)/\S*?\.html/", "/KEY/", path)  # a template's key
    path = re.sub(r"/(mapping|entry|endpoint)/[^/]+/", r"/\1/N/", path)
    return re.sub(r"/[^/]*\d[^/]*/", "/N/", path)


# Pages no link leads to without typing: a search with rows, one that finds nothing.
SEEDS = (
    "/admin/templates_admin/emailjournalpage/?q=erin%40example.com",
    "/admin/templates_admin/emailjournalpage/?q=nobody%40example.com",
    "/admin/templates_admin/suppressionlistpage/?q=bounce%40example.com",
)


def walk(page, base: str, who: str) -> tuple[list[str], int]:
    """Findings on every page reachable from the front page, and the pages seen."""
    findings: list[str] = []
    start = f"{base}/admin/"
    queue: deque[tuple[str, str, dict]] = deque([(start, "", {})])
    queue.extend((f"{base}{path}", "", {}) for path in SEEDS)
    seen = {shape(start)}
    pages = 0
    while queue and pages < MAX_PAGES:
        url, came_from, link = queue.popleft()
        if STOCK.search(urlsplit(url).path):
            if page.request.get(url).status == 403:
                findings.append(
                    f"{who}: the link {link.get('text')!r} on {came_from} leads to a page refused"
                    f" ({urlsplit(url).path})"
                )
            continue
        try:
            response = page.goto(url, wait_until="domcontentloaded")
        except Exception:  # a download, not a page
            continue
        if response is None or "text/html" not in response.headers.get("content-type", ""):
            continue
        pages += 1
        found = page.evaluate(INSPECT)
        found["refused"] = found["refused"] or response.status == 403
        here = urlsplit(url).path + (f"?{urlsplit(url).query}" if urlsplit(url).query else "")
        if found["refused"] and came_from:
            if link.get("id") == VERSION_LINK:
                continue  # test_support_is_not_offered_a_template_version_it_cannot_open
            findings.append(
                f"{who}: the link {link['text']!r} on {came_from} leads to 'Not open to you'"
                f" ({here})"
            )
        if found["duplicates"]:
            findings.append(f"{who} {here}: duplicate ids {found['duplicates']}")
        if found["unlabelled"]:
            findings.append(f"{who} {here}: controls without a label {found['unlabelled']}")
        if found["covered"]:
            findings.append(f"{who} {here}: buttons covered by another element {found['covered']}")
        if found["iso"]:
            findings.append(f"{who} {here}: raw ISO times {found['iso'][:3]}")
        if not found["header"] or not (found["breadcrumbs"] or urlsplit(url).path == "/admin/"):
            findings.append(f"{who} {here}: no navigation (header and breadcrumbs)")
        for target in found["links"]:
            href = target["href"].split("#", 1)[0]
            if not href.startswith(f"{base}/admin/") or SKIP.search(href):
                continue
            if "_changelist_filters" in href:
                continue  # the same page, remembering the list's filters
            if (key := shape(href)) not in seen:
                seen.add(key)
                queue.append((href, here, target))
    return findings, pages


def signed_in(browser, base: str, user, static: dict):
    """A browser context with ``user``'s session (no login form: the walk's time is the pages')
    whose static files come from ``static`` after their first load."""
    from django.test import Client

    client = Client()
    client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": base}]
    )

    def cached(route) -> None:
        url = route.request.url
        if url not in static:
            fetched = route.fetch()
            static[url] = {"status": fetched.status, "headers": fetched.headers}
            static[url]["body"] = fetched.body()
        route.fulfill(**static[url])

    context.route("**/static/**", cached)
    page = context.new_page()
    page.set_default_timeout(15_000)
    return context, page


def test_every_page_as_each_role_has_unique_ids_labels_times_links_and_navigation(
    console, browser, make_user, live_server
):
    findings: list[str] = []
    counts: dict[str, int] = {}
    static: dict[str, dict] = {}
    for group in ROLES:
        who = group or "admin"
        user = make_user(group, superuser=group is None)
        context, page = signed_in(browser, live_server.url, user, static)
        said, counts[who] = walk(page, live_server.url, who)
        findings += said
        context.close()
    assert not findings, "\n".join(findings)
    assert min(counts.values()) >= 5, counts  # the walk did walk


def test_support_is_not_offered_a_template_version_it_cannot_open(
    console, login, make_user, live_server
):
    page = login(make_user("Support"))
    page.goto(f"{live_server.url}/admin/templates_admin/emailjournalpage/?q=erin%40example.com")
    page.locator("tr.journal-row a").first.click()
    link = page.locator(f"#{VERSION_LINK}")
    if link.count():
        link.click()
        assert page.locator("#console-refused").count() == 0, page.url
