"""Template owners in a real browser: create and edit a mapping, and a side-by-side preview whose
hostile context and hostile template never get to run a script."""

from __future__ import annotations

import json

import pytest

from emailops import container

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


ACCEPTED = "dataset-publication-accepted"
BASE = "/admin/templates_admin/templatemappingpage/"

# Any script that ran in a preview frame would report here: postMessage crosses the sandbox's
# opaque origin, where `window.parent.x = 1` would not. Playwright injects this past the CSP.
LISTEN = "window.__messages = []; addEventListener('message', e => window.__messages.push(e.data));"
DRAIN = """() => new Promise(done => {
    addEventListener('message', e => { if (e.data === 'drain') done(window.__messages.filter(m => m !== 'drain')); });
    postMessage('drain', '*');
})"""


def csp_violations(page) -> list[str]:
    found: list[str] = []
    page.on(
        "console", lambda m: found.append(m.text) if "Content Security Policy" in m.text else None
    )
    return found


def test_owner_creates_then_edits_a_mapping(login, make_user, live_server, aws):
    aws.load_samples()
    page = login(make_user("Template owners"))
    violations = csp_violations(page)

    page.click("text=Template mappings")
    page.click("text=Add template mapping")
    page.fill("#id_message_id", "team-hello")
    page.fill("#id_template_file", "added-to-team.html")
    page.fill("#id_subject", "Hi {{.teamName}}")
    page.click("input[value=Create]")

    page.wait_for_url(f"{live_server.url}{BASE}mapping/team-hello/")
    assert "Created the mapping team-hello" in page.inner_text(".messagelist")
    page.fill("#id_subject", "Hello {{ teamName }}")
    page.click("input[value=Save]")

    assert "Saved team-hello (version 2)" in page.inner_text(".messagelist")
    history = page.inner_text("#history")
    assert "Hi {{.teamName}}" in history and "Hello {{ teamName }}" in history
    assert (
        container.current().mapping_store.get_mapping("team-hello").subject
        == "Hello {{ teamName }}"
    )
    page.goto(f"{live_server.url}{BASE}")
    assert page.locator("#result_list a", has_text="team-hello").count() == 1
    assert page.locator("#nav-sidebar").count() == 1  # the admin's own script still works
    assert violations == []


def test_side_by_side_preview_never_runs_a_payload(login, make_user, live_server, aws):
    aws.load_samples()
    # A hostile branded template: its markup is the author's own, so only the sandbox stops it.
    container.current().template_store.write_template(
        f"custom/O367/{ACCEPTED}.html",
        "<h1>SPARC Portal</h1><p>{{.datasetName}}</p>"
        "<script>parent.postMessage('template script', '*'); document.title = 'pwned'</script>"
        "<img src=\"data:,\" onerror=\"parent.postMessage('template onerror', '*')\">",
    )
    page = login(make_user("Template owners"))
    page.add_init_script(LISTEN)
    context = {
        "datasetName": "<img src=x onerror=\"parent.postMessage('context onerror', '*')\">"
        "<script>parent.postMessage('context script', '*')</script>",
        "reviewerName": "Ada",
        "date": "May 1",
    }

    page.goto(f"{live_server.url}{BASE}mapping/{ACCEPTED}/preview/")
    page.fill("#id_context", json.dumps(context))
    page.click("input[value=Preview]")
    page.wait_for_load_state("load")

    frames = page.locator("iframe.email-frame")
    assert frames.count() == 2
    for index in range(2):
        sandbox = frames.nth(index).get_attribute("sandbox")
        assert sandbox is not None and "allow-scripts" not in sandbox
    default, branded = (page.frame_locator("iframe.email-frame").nth(i) for i in range(2))
    assert "<script>parent.postMessage('context script'" in default.locator("body").inner_text()
    assert "SPARC Portal" in branded.locator("h1").inner_text()
    assert page.evaluate(DRAIN) == []
    assert "pwned" not in page.title() and page.evaluate("window.__pwned") is None
    subjects = page.locator(".pane-subject .subject").all_inner_texts()
    assert len(subjects) == 2 and all(s.startswith("Your dataset <img src=x") for s in subjects)

    desktop = frames.first.bounding_box()["width"]
    page.click("label[for=width-phone]")
    assert frames.first.bounding_box()["width"] <= 377 < desktop  # 375px plus the border
