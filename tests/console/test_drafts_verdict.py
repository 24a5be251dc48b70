"""The check judges the draft, not the traffic: a variable read only under ``{{if .x}}`` or
``{{with .x}}`` is optional; a warning the published version has too needs no confirming; the
page says what the verdict was rendered and compared with; a refused publish keeps the reason."""

from __future__ import annotations

from html import unescape

import pytest

from emailops import container
from templates_admin.drafts.check import draft_verdict
from templates_admin.drafts.services import WarningsNotAccepted, draft_create, draft_publish
from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = pytest.mark.django_db

TEAM = "added-to-team"
KEY = "default/added-to-team.html"
BASE = "/admin/templates_admin/templatemappingpage/"
PUBLISHED = """<p>Hello {{ .teamName }}</p>
{{if .organizationName}}<p>From {{ .organizationName }}</p>{{end}}
{{with .inviter}}<p>Invited by {{ . }}</p>{{end}}
<p>Hi {{ .nickname }}</p>
"""


@pytest.fixture
def published(samples, settings):
    container.current().template_store.write_template(KEY, PUBLISHED)
    # Two recent sends, neither with organizationName, inviter or nickname.
    rows = [
        journal_row(f"p{i}@example.com", at=BASE_TIME + i, message_id=TEAM, Context={"teamName": t})
        for i, t in enumerate(["A", "B"])
    ]
    put_rows(samples.dynamodb, settings.JOURNAL_TABLE, rows)
    return samples


def draft_of(owner, source: str):
    return draft_create(
        key=KEY,
        source=source,
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )


def test_an_if_or_with_guarded_variable_is_optional_not_missing(published, owner):
    draft = draft_of(owner, PUBLISHED.replace("Hello", "Welcome"))
    verdict = draft_verdict(draft=draft, adapters=container.current())
    missing = {f.message.split()[0] for f in verdict.findings if f.code == "missing-variable"}
    assert missing == {"nickname"}  # not organizationName, not inviter


def test_a_warning_the_published_version_has_too_needs_no_confirming(published, owner):
    draft = draft_of(owner, PUBLISHED.replace("Hello", "Welcome"))
    verdict = draft_verdict(draft=draft, adapters=container.current())
    assert verdict.new_warnings == []
    assert [f.code for f in verdict.inherited_warnings] == ["missing-variable"]
    draft_publish(
        draft_id=draft.pk, user=owner, reason="wording", adapters=container.current()
    )  # no confirmation asked
    assert "Welcome" in container.current().template_store.read_template(KEY)


def test_a_warning_the_draft_introduces_still_needs_confirming(published, owner):
    draft = draft_of(owner, PUBLISHED + "<p>{{ .discount }}</p>\n")
    verdict = draft_verdict(draft=draft, adapters=container.current())
    assert [f.message.split()[0] for f in verdict.new_warnings] == ["discount"]
    with pytest.raises(WarningsNotAccepted):
        draft_publish(draft_id=draft.pk, user=owner, reason="offer", adapters=container.current())


def test_the_page_says_what_the_verdict_used_and_a_refusal_keeps_the_reason(
    published, client, owner
):
    client.force_login(owner)
    draft = draft_of(owner, PUBLISHED + "<p>{{ .discount }}</p>\n")
    page = unescape(client.get(f"{BASE}draft/{draft.pk}/").content.decode())
    assert "Rendered with the sample context of added-to-team" in page
    assert "variables compared with the last 2 sends, newest " in page
    assert "1 warning the published version has too (no confirmation needed)" in page

    response = client.post(f"{BASE}draft/{draft.pk}/publish/", {"reason": "spring offer"})
    page = unescape(response.content.decode())
    assert response.status_code == 200
    assert "confirm them to publish" in page
    assert 'value="spring offer"' in page
    # The page came back at the publish URL: its replay form must still go to the draft's page.
    assert f'<form method="post" id="replay-form" action="{BASE}draft/{draft.pk}/">' in page
