"""An MJML draft publishes the HTML MRML compiles from it (template syntax untouched), which is
what the consumers read and render; the history keeps the MJML: a new draft starts from it, diffs
show it, a rollback brings it back. A template that asks for inlining publishes inlined CSS."""

from __future__ import annotations

from pathlib import Path

import pytest

from emailops import container
from templates_admin.drafts import selectors, services

pytestmark = pytest.mark.django_db

KEY = "default/added-to-team.html"
TEAM = "added-to-team"
MJML = (Path(__file__).resolve().parent.parent / "gate_templates" / "clean.mjml").read_text()


def published() -> str:
    return container.current().template_store.read_object(KEY).data.decode()


def publish(owner, source: str, *, reason: str = "mjml"):
    draft = services.draft_create(
        key=KEY,
        source=source,
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    return services.draft_publish(
        draft_id=draft.pk,
        user=owner,
        reason=reason,
        adapters=container.current(),
        accept_warnings=True,
    )


def test_an_mjml_draft_publishes_html_and_its_history_keeps_the_mjml(samples, owner):
    adapters = container.current()
    first = publish(owner, MJML)
    html = published()
    assert html.startswith("<!doctype html>") and "<mjml" not in html
    assert 'href="https://{{.host}}/{{.organizationNodeId}}"' in html  # untouched
    # What the consumer renders from the bucket: the published HTML with the send's context.
    rendered = adapters.renderer.render_body(
        html, {"administrator": "Ada", "organizationName": "Acme", "host": "x.test"}, name=KEY
    ).text
    assert "Welcome, Ada: you were added to Acme." in rendered
    # The history shows the MJML; a new draft of the file starts from it.
    source = selectors.version_source(
        key=KEY, version_id=first.version_id, template_store=adapters.template_store
    )
    assert source == MJML
    again = services.draft_create(
        key=KEY, source=None, subject=None, message_id=TEAM, user=owner, adapters=adapters
    )
    assert again.source == MJML
    services.draft_discard(draft_id=again.pk, user=owner, template_store=adapters.template_store)

    second = publish(owner, MJML.replace("Welcome,", "Hello,"), reason="hello")
    diff = selectors.version_diff(
        key=KEY,
        old=first.version_id,
        new=second.version_id,
        template_store=adapters.template_store,
    )
    assert '+        <mj-text color="#222222" font-size="16px">Hello,' in diff
    rolled = services.template_rollback(
        key=KEY,
        version_id=first.version_id,
        user=owner,
        reason="back",
        template_store=adapters.template_store,
    )
    assert published() == html
    assert (
        selectors.version_source(
            key=KEY, version_id=rolled.version_id, template_store=adapters.template_store
        )
        == MJML
    )


def test_an_html_template_that_asks_for_inlining_publishes_inlined_css(samples, owner):
    source = (
        '<!-- emailops: inline-css -->\n<html lang="en"><head><title>T</title>'
        "<style>p { color: #222222 }</style></head><body><p>Hi {{ .teamName }}</p></body></html>"
    )
    publish(owner, source)
    assert '<p style="color: #222222;">Hi {{ .teamName }}</p>' in published()


def test_an_mjml_error_blocks_the_publish(samples, owner):
    broken = (Path(__file__).resolve().parent.parent / "gate_templates" / "broken.mjml").read_text()
    with pytest.raises(services.CheckFailed) as failed:
        publish(owner, broken)
    [error] = failed.value.findings
    assert (error.rule, error.line) == ("mjml", 5)


def test_the_replay_preview_shows_the_compiled_mjml(samples, owner, client):
    draft = services.draft_create(
        key=KEY,
        source=MJML,
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    client.force_login(owner)
    page = client.get(f"/admin/templates_admin/templatemappingpage/draft/{draft.pk}/").content
    assert b"&lt;mj-column&gt;" not in page  # the draft pane renders HTML, not the MJML
    assert b"mj-outlook-group-fix" in page  # MRML's markup, rendered in the draft's pane
