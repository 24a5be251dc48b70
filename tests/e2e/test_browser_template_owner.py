"""A template owner's round in a real browser: the new-draft page has one file picker; text from
the editor (which the browser submits with CRLF) publishes with the file's own LF endings; the
draft page keeps Publish under the verdict, where loading previews cannot move it, and an
"(unchanged)" note readable on its heading; the history's roll-back reason sits in its row."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from emailops import container

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TEAM = "added-to-team"
KEY = "default/added-to-team.html"
BASE = "/admin/templates_admin/templatemappingpage/"


def top(page, selector: str) -> float:
    return page.evaluate(
        f"document.querySelector({selector!r}).getBoundingClientRect().top + window.scrollY"
    )


def test_owner_edits_publishes_and_rolls_back_in_the_browser(
    login, make_user, live_server, aws, screenshot
):
    aws.load_samples()
    original = container.current().template_store.read_object(KEY).data
    assert b"\r" not in original
    page = login(make_user("Template owners"))

    page.goto(f"{live_server.url}{BASE}mapping/{TEAM}/drafts/new/")
    expect(page.locator("select")).to_have_count(1)  # one file picker
    page.click(f"#load-current a:has-text('{KEY}')")
    editor = page.locator("#id_source")
    expect(editor).to_have_value(original.decode())
    editor.fill(original.decode().replace("Open your teams", "See your teams"))
    page.click("#draft-form input[type=submit]")
    page.wait_for_url("**/draft/*/")
    screenshot(page, "draft")

    # Publish under the verdict, above the previews, and where it was before they loaded.
    assert top(page, "#publish") < top(page, "section.draft-pair")
    # A quiet note on a blue module heading takes the heading's colour (it was grey on blue).
    colours = page.evaluate(
        """() => {
            const h2 = document.querySelector("section.draft-pair h2");
            const note = document.createElement("span");
            note.className = "quiet";
            note.textContent = "(unchanged)";
            h2.appendChild(note);
            return [getComputedStyle(h2).color, getComputedStyle(note).color];
        }"""
    )
    assert colours[0] == colours[1], colours

    page.fill("#id_reason", "wording")
    page.click("#publish-button")
    page.wait_for_url("**/history/**")
    published = container.current().template_store.read_object(KEY).data
    assert published == original.replace(b"Open your teams", b"See your teams")  # LF, as it was

    # The roll-back reason is in the version's row, beside its styled button.
    row = page.locator("#versions tbody tr").nth(1)
    row.locator("input[name=reason]").fill("back to the original")
    button = row.locator("button.button")
    expect(button).to_have_text("Roll back to this")
    screenshot(page, "history")
    button.click()
    page.wait_for_url("**/history/**")
    assert container.current().template_store.read_object(KEY).data == original
