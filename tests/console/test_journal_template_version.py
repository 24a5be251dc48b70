"""Which version did they get? Every send's journal row records TemplateVersion (the published
object's version as the composer fetched it), and the journal renders the email with that version,
not today's, after newer versions are published."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.urls import reverse

from emailops import container
from templates_admin.drafts import selectors, services
from templates_admin.journal.selectors import journal_search
from tests.journal_factory import send_through_pipeline

pytestmark = pytest.mark.django_db

KEY = "default/added-to-team.html"
CONTEXT = {"teamName": "Curators", "host": "app.pennsieve.test", "organizationNodeId": "N:o:1"}


@pytest.fixture
def support(client, make_user):
    client.force_login(make_user("Support"))
    return client


def publish(owner, html: str) -> str:
    draft = services.draft_create(
        key=KEY,
        source=html,
        subject=None,
        message_id="added-to-team",
        user=owner,
        adapters=container.current(),
    )
    return services.draft_publish(
        draft_id=draft.pk, user=owner, reason="test", adapters=container.current()
    ).version_id


def send(aws, address: str) -> dict:
    send_through_pipeline(
        aws,
        {"messageId": "added-to-team", "recipients": [{"email": address}], "context": CONTEXT},
    )
    (row,) = journal_search(adapters=container.current(), query=address).rows
    # As stored, to compare with what was published.
    return container.current().journal_reader.read_stored(row.key).attributes.as_dict()


def email_frame(client, row: dict) -> str:
    url = reverse("admin:templates_admin_journal_detail", args=[row["Id"]]) + "email/"
    page = client.get(url).content.decode()
    return unescape(re.search(r"<iframe[^>]*>", page).group(0))


def test_the_row_records_the_version_and_the_email_renders_with_it(aws, owner, support):
    aws.load_samples()
    before = send(aws, "first@example.com")  # the file predates the console: its ETag
    etag = container.current().template_store.head_object(KEY).etag.strip('"')
    assert before["TemplateVersion"] == etag

    v1 = publish(owner, "<p>Version one for {{.teamName}}</p>")
    row = send(aws, "second@example.com")
    assert row["TemplateVersion"] == v1
    publish(owner, "<p>Version two for {{.teamName}}</p>")

    frame = email_frame(support, row)
    assert "Version one for Curators" in frame and "Version two" not in frame
    # The row sent before the console's first publish renders the original bytes, kept then.
    assert [v.kind for v in selectors.template_history(key=KEY)][-1] == "original"
    original = email_frame(support, before)
    assert "Welcome to Curators" in original and "Version" not in original

    detail = support.get(reverse("admin:templates_admin_journal_detail", args=[row["Id"]]))
    page = unescape(detail.content.decode())
    assert "TemplateVersion" in page and v1 in page


def test_a_version_the_console_never_saw_falls_back_to_todays_template(aws, owner, support):
    aws.load_samples()
    row = send(aws, "third@example.com")
    container.current().template_store.write_template(
        KEY, "<p>Replaced by hand for {{.teamName}}</p>"
    )

    frame = email_frame(support, row)

    assert "Replaced by hand for Curators" in frame  # said to be today's template, not the sent one
    url = reverse("admin:templates_admin_journal_detail", args=[row["Id"]]) + "email/"
    assert "today's template" in unescape(support.get(url).content.decode())


def test_the_version_link_is_offered_only_to_those_who_can_open_it(aws, owner, client, make_user):
    """Issue 36, point 6: the history pages are the template owners'; Support was offered a
    "Template version …" button that led to "Not open to you"."""
    aws.load_samples()
    publish(owner, "<p>Welcome to {{.teamName}}</p>")
    row = send(aws, "vic@example.com")
    url = reverse("admin:templates_admin_journal_detail", args=[row["Id"]])
    for group, offered in (("Support", False), ("Support leads", False), ("Template owners", True)):
        client.force_login(make_user(group, username=f"u-{group}"))
        page = client.get(url).content.decode()
        assert ('id="journal-template-version-link"' in page) is offered, group
        if offered:
            link = re.search(r'href="([^"]+)" id="journal-template-version-link"', page).group(1)
            assert client.get(unescape(link)).status_code == 200
