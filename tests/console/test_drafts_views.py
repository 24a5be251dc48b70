"""Draft pages through Django's test client: create (paste, upload, edit the current source),
the replay preview with a real past send (masked), the check, publish with warnings, history,
diff and rollback, and the permission boundary."""

from __future__ import annotations

from html import unescape

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from emailops import container
from templates_admin.drafts import preview as draft_preview
from templates_admin.drafts.check import check_draft
from templates_admin.drafts.services import draft_create
from templates_admin.models import TemplateDraft
from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = pytest.mark.django_db

TEAM = "added-to-team"
BASE = "/admin/templates_admin/templatemappingpage/"


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


def text(response) -> str:
    return unescape(response.content.decode())


def sends(aws, settings, *contexts: dict) -> list[str]:
    rows = [
        journal_row(f"p{i}@example.com", at=BASE_TIME + i, message_id=TEAM, Context=context)
        for i, context in enumerate(contexts)
    ]
    put_rows(aws.dynamodb, settings.JOURNAL_TABLE, rows)
    return [row["Id"] for row in rows]


def test_support_cannot_see_drafts(samples, client, make_user):
    client.force_login(make_user("Support"))
    assert client.get(f"{BASE}mapping/{TEAM}/drafts/").status_code == 403


def test_the_mapping_page_links_the_drafts(samples, owner_client):
    page = text(owner_client.get(f"{BASE}mapping/{TEAM}/"))
    assert f'href="{BASE}mapping/{TEAM}/drafts/"' in page


def test_create_by_pasting_lists_it_with_author(samples, owner_client, owner):
    response = owner_client.post(
        f"{BASE}mapping/{TEAM}/drafts/new/",
        {"target": "default", "source": "<p>Hi {{ teamName }}</p>", "subject": ""},
    )
    draft = TemplateDraft.objects.get()
    assert response.status_code == 302 and response["Location"].endswith(f"draft/{draft.pk}/")
    assert (draft.key, draft.author, draft.message_id) == (
        "default/added-to-team.html",
        owner,
        TEAM,
    )
    listing = text(owner_client.get(f"{BASE}mapping/{TEAM}/drafts/"))
    assert f"#{draft.pk}" in listing and owner.get_username() in listing
    # Nothing a draft does changes what is sent.
    assert "Hi {{ teamName }}" not in container.current().template_store.read_template(draft.key)


def test_create_by_upload_for_a_new_organization(samples, owner_client):
    upload = SimpleUploadedFile("x.html", "<p>Branded {{ teamName }} é</p>".encode())
    owner_client.post(
        f"{BASE}mapping/{TEAM}/drafts/new/",
        {"target": "new", "new_organization": "512", "source": "", "upload": upload},
    )
    draft = TemplateDraft.objects.get()
    assert draft.key == "custom/O512/added-to-team.html" and "é" in draft.source


def test_edit_the_current_source_loads_it_into_the_form(samples, owner_client):
    page = text(owner_client.get(f"{BASE}mapping/{TEAM}/drafts/new/?target=default&load=1"))
    current = container.current().template_store.read_template("default/added-to-team.html")
    assert current.strip().splitlines()[0] in page


def test_a_subject_only_draft_needs_a_subject_or_source(samples, owner_client):
    response = owner_client.post(f"{BASE}mapping/{TEAM}/drafts/new/", {"target": "default"})
    assert response.status_code == 200 and "Give a template source" in text(response)


def test_preview_replays_a_real_send_masked_with_both_renders_and_the_diff(
    samples, owner_client, owner, settings
):
    settings.JOURNAL_SENSITIVE_KEYS = ["token"]
    [_old, key] = sends(
        samples,
        settings,
        {"teamName": "Old", "organizationNodeId": "N:1"},
        {"teamName": "Curators", "resetToken": "s3cret", "organizationNodeId": "N:1"},
    )
    draft = draft_create(
        key="default/added-to-team.html",
        source="<p>New body for {{ teamName }} {{ resetToken }} {{ nickname }}</p>",
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    page = text(
        owner_client.post(f"{BASE}draft/{draft.pk}/", {"replay": "1", "send": key, "count": 20})
    )
    assert "s3cret" not in page  # masked everywhere: context, renders, diffs
    assert "New body for Curators" in page  # the draft render, in its iframe's srcdoc
    assert page.count('sandbox=""') >= 2  # published and draft, inert
    assert '<span class="diff-add">+&lt;p&gt;New body for Curators' in response_raw(
        owner_client, draft, key
    )
    assert "nickname" in page and "missing in 2 of 2" in page  # the variable report


def response_raw(client, draft, key) -> str:
    return client.post(f"{BASE}draft/{draft.pk}/", {"replay": "1", "send": key}).content.decode()


def test_recent_sends_are_newest_first_bounded_and_masked(samples, settings):
    settings.JOURNAL_SENSITIVE_KEYS = ["password"]
    keys = sends(samples, settings, *[{"i": i, "password": "p"} for i in range(5)])
    result = draft_preview.recent_sends(message_id=TEAM, limit=3, adapters=container.current())
    assert [s.key for s in result.sends] == keys[::-1][:3]
    assert all(s.context["password"] != "p" for s in result.sends)


def test_a_branded_organization_gets_its_own_pair(samples, owner):
    draft = draft_create(
        key="default/dataset-publication-accepted.html",
        source="<p>{{ datasetName }}</p>",
        subject="Accepted: {{ datasetName }}",
        message_id="dataset-publication-accepted",
        user=owner,
        adapters=container.current(),
    )
    result = draft_preview.draft_preview(draft=draft, adapters=container.current())
    assert [p.organization for p in result.pairs] == [None, "367"]
    default, branded = result.pairs
    assert default.draft.key == "default/dataset-publication-accepted.html" and default.html_diff
    # O367 keeps its branded file: only the subject changes there.
    assert branded.draft.key == "custom/O367/dataset-publication-accepted.html"
    assert not branded.html_diff and branded.subject_diff


def test_a_120_kb_draft_fails_the_check_and_cannot_be_published(samples, owner_client, owner):
    words = "lorem ipsum dolor sit amet " * 4600
    draft = draft_create(
        key="default/added-to-team.html",
        source=f"<p>{{{{ teamName }}}} {words}</p>",
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    [size] = [f for f in check_draft(draft=draft, adapters=container.current()) if f.code == "size"]
    assert size.severity == "error" and "Gmail clips messages at 102 KB" in size.message
    page = text(owner_client.get(f"{BASE}draft/{draft.pk}/"))
    assert "Gmail clips messages at 102 KB" in page and 'id="publish-button"' not in page
    response = owner_client.post(f"{BASE}draft/{draft.pk}/publish/", {"reason": "try"})
    assert response.status_code == 200  # the draft's page again, with why
    assert "Not published: the check found 1 error(s)." in text(response)
    assert words[:50] not in container.current().template_store.read_template(draft.key)


def test_publish_with_warnings_needs_confirming_then_history_diff_and_rollback(
    samples, owner_client, owner, settings
):
    settings.TEMPLATE_CACHE_SECONDS = 60
    key = "default/added-to-team.html"
    before = container.current().template_store.read_template(key)
    draft = draft_create(
        key=key,
        source='<p>{{ teamName }} <a href="http://insecure.test/">x</a></p>',
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    page = text(owner_client.get(f"{BASE}draft/{draft.pk}/"))
    assert "http-link" in page and "within 60 s" in page
    owner_client.post(f"{BASE}draft/{draft.pk}/publish/", {"reason": "new look"})
    assert container.current().template_store.read_template(key) == before  # not confirmed
    response = owner_client.post(
        f"{BASE}draft/{draft.pk}/publish/", {"reason": "new look", "accept_warnings": "on"}
    )
    assert response.status_code == 302 and "history/" in response["Location"]
    assert "insecure.test" in container.current().template_store.read_template(key)

    history = text(owner_client.get(f"{BASE}history/{key}/"))
    assert "new look" in history and "original" in history
    page = owner_client.get(f"{BASE}history/{key}/").content.decode()
    assert 'class="diff-add">+&lt;p&gt;{{ teamName }} &lt;a href=' in page

    from templates_admin.drafts.selectors import template_history

    original = template_history(key=key)[-1]
    owner_client.post(
        f"{BASE}history/{key}/rollback/", {"version": original.version_id, "reason": "revert"}
    )
    assert container.current().template_store.read_template(key) == before


def test_the_check_warns_of_variables_recent_sends_did_not_provide(samples, owner, settings):
    sends(samples, settings, {"teamName": "A"}, {"teamName": "B", "nickname": "b"})
    draft = draft_create(
        key="default/added-to-team.html",
        source="<p>{{ teamName }}</p>\n<p>{{ nickname }}</p>",
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    [missing] = [
        f
        for f in check_draft(draft=draft, adapters=container.current())
        if f.code == "missing-variable"
    ]
    assert missing.severity == "warning" and missing.line == 2
    assert "nickname is missing in 1 of the last 2 sends" in missing.message


def test_a_subject_only_draft_is_checked_with_every_branded_copy(samples, owner):
    draft = draft_create(
        key="default/dataset-publication-accepted.html",
        source="",
        subject="x" * 999,
        message_id="dataset-publication-accepted",
        user=owner,
        adapters=container.current(),
    )
    found = {
        (f.code, f.organization)
        for f in check_draft(draft=draft, adapters=container.current())
        if f.severity == "error"
    }
    assert found == {("subject-length", None), ("subject-length", "367")}


def test_an_unclosed_if_is_reported_on_the_line_that_opened_it(samples, owner_client, owner):
    source = "<p>a</p>\n<p>b</p>\n<p>c</p>\n<p>d</p>\n{{if .x}}\n<p>{{ .teamName }}</p>\n"
    draft = draft_create(
        key="default/added-to-team.html",
        source=source,
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    page = text(owner_client.get(f"{BASE}draft/{draft.pk}/"))
    finding = page.split('<tr class="finding-error">', 1)[1].split("</tr>", 1)[0]
    assert "{{if}} opened on line 5 is never closed with {{end}}" in finding
    assert finding.endswith("<td>5</td>")


def test_an_action_never_closed_is_reported_as_such(samples, owner_client, owner):
    draft = draft_create(
        key="default/added-to-team.html",
        source="<p>Hello</p>\n<p>{{ .teamName </p>\n<p>Bye</p>\n",
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    page = text(owner_client.get(f"{BASE}draft/{draft.pk}/"))
    finding = page.split('<tr class="finding-error">', 1)[1].split("</tr>", 1)[0]
    assert "{{ on line 2 has no matching }}" in finding and "unexpected '.'" not in finding
    assert finding.endswith("<td>2</td>")


# --- a version that does not render: no rendered diff, and why ---------------------------------


def broken_draft(owner, *, source: str | None, subject: str | None = None):
    return draft_create(
        key="default/added-to-team.html",
        source=source,
        subject=subject,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )


def test_a_broken_drafts_html_diff_is_a_note_not_the_published_email_removed(
    samples, owner_client, owner
):
    draft = broken_draft(owner, source="<p>Hi {{ .teamName }}</p>\n{{if .x}}\n<p>never ended</p>\n")
    [pair] = draft_preview.draft_preview(draft=draft, adapters=container.current()).pairs
    assert pair.published.html and pair.draft.html is None
    assert pair.html_diff == [] and pair.text_diff == []
    assert pair.body_note.startswith("The draft does not render: ")
    assert "{{if}} opened on line 2" in pair.body_note
    assert pair.body_note.endswith("fix it to see the difference.")
    assert pair.changed  # not "(unchanged)": nothing could be compared

    page = owner_client.get(f"{BASE}draft/{draft.pk}/").content.decode()
    html_diff = page.split("<h3>HTML diff</h3>", 1)[1].split("<h3>Plain-text diff</h3>", 1)[0]
    assert 'class="diff-del"' not in html_diff and "No difference." not in html_diff
    assert "The draft does not render: " in unescape(html_diff)
    text_diff = page.split("<h3>Plain-text diff</h3>", 1)[1].split("</section>", 1)[0]
    assert 'class="diff-del"' not in text_diff and "The draft does not render: " in unescape(
        text_diff
    )
    assert "(unchanged)" not in page.split('data-pane="default"', 1)[1].split("</h2>", 1)[0]


def test_when_the_published_version_does_not_render_the_draft_is_not_all_added(samples, owner):
    container.current().template_store.write_template(
        "default/added-to-team.html", "<p>{{ .teamName </p>\n"
    )
    draft = broken_draft(owner, source="<p>Fixed: {{ .teamName }}</p>\n")
    [pair] = draft_preview.draft_preview(draft=draft, adapters=container.current()).pairs
    assert pair.draft.html and pair.html_diff == [] and pair.text_diff == []
    assert pair.body_note.startswith("The published version does not render: ")
    assert "has no matching }}" in pair.body_note


def test_a_subject_that_does_not_render_is_a_note_in_the_subject_diff(samples, owner):
    draft = broken_draft(owner, source=None, subject="Welcome to {{ .teamName")
    [pair] = draft_preview.draft_preview(draft=draft, adapters=container.current()).pairs
    assert pair.published.subject and pair.draft.subject is None
    assert pair.subject_diff == [] and pair.subject_note.startswith("The draft does not render: ")
    assert pair.html_diff == [] and pair.body_note == ""  # the body renders on both sides


def test_a_new_file_is_still_shown_all_added(samples, owner):
    draft = draft_create(
        key="custom/O512/added-to-team.html",
        source="<p>Branded {{ .teamName }}</p>\n",
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    pair = draft_preview.draft_preview(draft=draft, adapters=container.current()).pairs[-1]
    assert pair.organization == "512" and pair.body_note == ""
    assert any(line.kind == "add" and "Branded" in line.text for line in pair.html_diff)
