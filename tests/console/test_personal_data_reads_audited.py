"""Every page and command that shows a recipient audits the read (``JournalReadAudit``), as the
journal's own pages do: the drafts' replay preview, the dead-letter page, the suppression list,
its search and an entry, and ``manage.py dlq list``."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from audit.models import JournalReadAudit
from emailops import container
from templates_admin.drafts.services import draft_create
from tests.console.test_ops_views import BASE as OPS
from tests.console.test_ops_views import dead_letter, read_queue
from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = pytest.mark.django_db

SUPPRESSION = "/admin/templates_admin/suppressionlistpage/"
DRAFTS = "/admin/templates_admin/templatemappingpage/"


def audits(action: str) -> list[JournalReadAudit]:
    return list(JournalReadAudit.objects.filter(action=action).order_by("id"))


def test_the_replay_preview_is_audited(aws, client, make_user, settings):
    aws.load_samples()
    rows = [
        journal_row(f"p{i}@example.com", at=BASE_TIME + i, message_id="added-to-team")
        for i in range(2)
    ]
    put_rows(aws.dynamodb, settings.JOURNAL_TABLE, rows)
    owner = make_user("Template owners")
    draft = draft_create(
        key="default/added-to-team.html", source="<p>x</p>", subject=None,
        message_id="added-to-team", user=owner, adapters=container.current(),
    )  # fmt: skip
    client.force_login(owner)
    assert client.get(f"{DRAFTS}draft/{draft.pk}/").status_code == 200
    [audit] = audits("replay")
    assert (audit.actor, audit.query, audit.rows) == ("template-owners", "added-to-team", 2)


def test_the_dead_letter_page_and_dlq_list_are_audited(aws, client, make_user):
    dead_letter(aws)
    client.force_login(make_user("Support"))
    client.get(OPS + "dlq/")  # not read yet: nothing shown, nothing audited
    assert audits("dead-letters") == []
    read_queue(client)
    client.get(OPS + "dlq/")
    [audit] = audits("dead-letters")
    assert (audit.actor, audit.rows, audit.channel) == ("support", 1, "console")

    call_command("dlq", "list", stdout=io.StringIO())
    [cli] = audits("dlq-list")
    assert cli.channel == "cli" and cli.actor.startswith("os:") and cli.rows == 1


def test_the_suppression_list_search_and_entry_are_audited(aws, client, make_user):
    container.current().suppression_list.add(
        "kept@example.com", reason="bounce", detail="550", source="t", now=BASE_TIME
    )
    client.force_login(make_user("Support"))
    assert client.get(SUPPRESSION).status_code == 200
    assert client.get(SUPPRESSION, {"q": "kept"}).status_code == 200
    assert client.get(f"{SUPPRESSION}entry/kept@example.com/").status_code == 200
    listed = audits("suppression-list")
    assert [(a.query, a.rows) for a in listed] == [("", 1), ("kept", 1)]
    [entry] = audits("suppression-entry")
    assert (entry.query, entry.rows, entry.actor) == ("kept@example.com", 1, "support")


def test_the_held_and_log_only_page_is_audited(aws, client, make_user):
    row = journal_row("held@example.com", at=BASE_TIME, LoggedOnly=True, LoggedOnlyReason="loop")
    put_rows(aws.dynamodb, "email-journal", [row])
    client.force_login(make_user("Support"))
    page = client.get("/admin/templates_admin/emailjournalpage/held/", {"reason": "loop"})
    # Shown masked (issue 36), and still audited: its rows' links carry keys that may name them.
    assert "h***@example.com" in page.content.decode()
    [audit] = audits("held")
    assert (audit.actor, audit.rows, audit.filters) == ("support", 1, {"reason": "loop"})
