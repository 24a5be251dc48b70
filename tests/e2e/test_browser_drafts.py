"""A template owner in a real browser replays a draft on a real past send: opens the draft from the
mapping page, picks a recent send, and sees the published and the draft render and their diff,
with the send's sensitive values masked and no CSP violation."""

from __future__ import annotations

import pytest

from emailops import container
from templates_admin.drafts.services import draft_create
from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TEAM = "added-to-team"
BASE = "/admin/templates_admin/templatemappingpage/"


def test_owner_replays_a_draft_on_a_recent_send(login, make_user, live_server, aws, settings):
    aws.load_samples()
    settings.JOURNAL_SENSITIVE_KEYS = ["token"]
    rows = [
        journal_row(
            f"p{i}@example.com",
            at=BASE_TIME + i,
            message_id=TEAM,
            Context={"teamName": name, "inviteToken": "tok-s3cret", "organizationNodeId": "N:1"},
        )
        for i, name in enumerate(["Archivists", "Curators"])
    ]
    put_rows(aws.dynamodb, settings.JOURNAL_TABLE, rows)
    owner = make_user("Template owners")
    draft = draft_create(
        key=f"default/{TEAM}.html",
        source="<h1>Welcome aboard, {{ teamName }}!</h1><p>Token: {{ inviteToken }}</p>",
        subject="Join {{ teamName }}",
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    page = login(owner)
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security" in m.text else 0)

    page.goto(f"{live_server.url}{BASE}mapping/{TEAM}/")
    page.click("#drafts-link")
    page.click(f"#drafts a:has-text('#{draft.pk}')")
    page.wait_for_url(f"{live_server.url}{BASE}draft/{draft.pk}/")

    # The older send (Archivists), picked one by one from the recent sends.
    page.select_option("#replay-send", value=rows[0]["Id"])
    with page.expect_navigation():
        page.click("#replay-form input[type=submit]")
    assert page.url.endswith(f"/draft/{draft.pk}/")  # the chosen send is not in the URL

    pair = page.locator("section.draft-pair[data-pane=default]")
    published = pair.locator(".preview-pane.published iframe").content_frame
    drafted = pair.locator(".preview-pane.draft iframe").content_frame
    assert "Archivists" in published.locator("body").inner_text()
    assert "Welcome aboard, Archivists!" in drafted.locator("h1").inner_text()
    assert pair.locator(".preview-pane.draft .subject").inner_text() == "Join Archivists"

    diff = pair.locator("pre.draft-diff").nth(1).inner_text()  # subject, HTML, text
    assert "+<h1>Welcome aboard, Archivists!</h1>" in diff
    assert "tok-s3cret" not in page.content()  # masked in the context, renders and diffs
    assert "tok-s3cret" not in drafted.locator("body").inner_text()
    assert violations == []
