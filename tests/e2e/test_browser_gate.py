"""The publish gate on the draft page, in a real browser: the same findings ``templates lint``
reports for the fixture templates (tests/gate_templates/) appear in the check, each with its
rule, element and fix; an MJML draft's compile error blocks the publish with its line."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from emailops import container
from templates_admin.drafts.services import draft_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TEAM = "added-to-team"
BASE = "/admin/templates_admin/templatemappingpage/"
ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "gate_templates"


def linted(path: Path) -> set[tuple[str, str]]:
    out = StringIO()
    with contextlib.suppress(CommandError):  # exit 1: the MJML error
        call_command("templates", "lint", "--json", "--message-id", TEAM, str(path), stdout=out)
    return {
        (f["rule"], f["element"])
        for f in json.loads(out.getvalue())
        if f["severity"] in ("error", "warning")
    }


def shown(page) -> set[tuple[str, str]]:
    rows = page.locator("#check-new tbody tr")
    found = set()
    for i in range(rows.count()):
        row = rows.nth(i)
        element = row.locator(".finding-element")
        found.add(
            (
                row.locator(".finding-rule").inner_text(),
                element.inner_text() if element.count() else "",
            )
        )
    return found


@pytest.mark.parametrize("fixture", ["flexbox.html", "img-no-alt.html", "broken.mjml"])
def test_the_draft_page_shows_what_lint_finds(fixture, login, make_user, live_server, aws):
    aws.load_samples()
    owner = make_user("Template owners")
    source = (FIXTURES / fixture).read_text()
    draft = draft_create(
        key=f"default/{TEAM}.html",
        source=source,
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    page = login(owner)
    page.goto(f"{live_server.url}{BASE}draft/{draft.pk}/")
    expected = linted(FIXTURES / fixture)
    assert expected and shown(page) >= expected
    if fixture.endswith(".mjml"):
        assert "The check found errors" in page.content()
    else:
        assert page.locator("#check-new .finding-fix").first.inner_text().startswith("Fix: ")
        # The dark previews beside the light one: its own dark styles, and a forced inversion.
        dark = page.locator("section.draft-pair[data-pane=default] .dark-previews")
        dark.locator("summary").click()
        inverted = dark.locator("iframe.dark-inverted").content_frame
        assert "invert(1)" in inverted.locator("style").first.inner_text()
        assert dark.locator("iframe.dark-prefers").is_visible()


def test_lint_runs_axe_core_in_chromium_where_asked():
    # As a producer's CI runs it: its own process (this one's Playwright loop is the browser
    # fixtures').
    files = [str(FIXTURES / "img-no-alt.html"), str(FIXTURES / "clean.html")]
    done = subprocess.run(
        [sys.executable, "manage.py", "templates", "lint", "--json", "--axe", *files],
        cwd=ROOT,
        env={**os.environ, "DJANGO_DEBUG": "true", "SPAMD_ADDRESS": ""},
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    axe = [f for f in json.loads(done.stdout) if f["rule"].startswith("axe")]
    assert [(f["rule"], Path(f["path"]).name) for f in axe] == [
        ("axe-image-alt", "img-no-alt.html")
    ]
    assert axe[0]["element"].startswith('<img src="https://cdn.example.com/banner.jpg"')


def test_lint_says_when_axe_core_could_not_run(monkeypatch):
    from emailops import axe

    monkeypatch.setattr(axe, "CHROMIUM", Path("/nonexistent/chromium"))
    out = StringIO()
    call_command("templates", "lint", "--json", "--axe", str(FIXTURES / "clean.html"), stdout=out)
    [note] = [f for f in json.loads(out.getvalue()) if f["rule"] == "axe"]
    assert note["severity"] == "note"
    assert note["message"] == (
        "axe-core not run: no chromium at /nonexistent/chromium (Debian's chromium package)"
    )
