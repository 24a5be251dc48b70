"""Templates keep their bytes: the editor's text box is submitted with CRLF line breaks (browsers
do so), and a draft from it takes the line endings of the file it replaces; publish, rollback and
``templates pull`` are byte-exact; the history diff compares lines, not line endings."""

from __future__ import annotations

from html import unescape

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from emailops import container
from templates_admin.drafts.selectors import template_history, version_diff
from templates_admin.models import TemplateDraft

pytestmark = pytest.mark.django_db

TEAM = "added-to-team"
KEY = "default/added-to-team.html"
BASE = "/admin/templates_admin/templatemappingpage/"


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


def published_bytes(key: str = KEY) -> bytes:
    return container.current().template_store.read_object(key).data


def as_browser_sends(text: str) -> str:
    return text.replace("\n", "\r\n")


def edit_and_publish(owner_client, source: str, *, target: str = "default", **extra) -> None:
    owner_client.post(
        f"{BASE}mapping/{TEAM}/drafts/new/", {"target": target, "source": source, **extra}
    )
    draft = TemplateDraft.objects.latest("id")
    response = owner_client.post(
        f"{BASE}draft/{draft.pk}/publish/", {"reason": "edit", "accept_warnings": "on"}
    )
    assert response.status_code == 302, unescape(response.content.decode())


def test_an_lf_file_round_trips_through_editor_publish_rollback_and_pull(
    samples, owner_client, tmp_path
):
    original = published_bytes()
    assert b"\r" not in original and original.count(b"\n") > 5
    text = original.decode()
    edited = text.replace("</p>", " (edited)</p>", 1)
    edit_and_publish(owner_client, as_browser_sends(edited))
    assert published_bytes() == edited.encode()  # no CR crept in, one line changed

    [new, old] = template_history(key=KEY)
    diff = version_diff(
        key=KEY,
        old=old.version_id,
        new=new.version_id,
        template_store=container.current().template_store,
    )
    changed = [line for line in diff.splitlines()[2:] if line.startswith(("-", "+"))]
    assert len(changed) == 2 and "(edited)" in changed[1]

    owner_client.post(
        f"{BASE}history/{KEY}/rollback/", {"version": old.version_id, "reason": "revert"}
    )
    assert published_bytes() == original
    call_command("templates", "pull", str(tmp_path))
    assert (tmp_path / KEY).read_bytes() == original


def test_a_crlf_file_keeps_crlf_and_a_new_file_gets_lf(samples, owner_client):
    crlf = "<p>Hi {{ teamName }}</p>\r\n<p>From {{ administrator }}</p>\r\n"
    upload = SimpleUploadedFile("x.html", crlf.encode())
    edit_and_publish(owner_client, "", target="new", new_organization="77", upload=upload)
    key = "custom/O77/added-to-team.html"
    assert published_bytes(key) == crlf.encode()  # an upload is kept byte for byte

    edited = crlf.replace("Hi", "Hello")
    edit_and_publish(owner_client, edited.replace("\r\n", "\n"), target="O77")
    assert published_bytes(key) == edited.encode()

    edit_and_publish(
        owner_client,
        as_browser_sends("<p>{{ teamName }}</p>\n"),
        target="new",
        new_organization="78",
    )
    assert published_bytes("custom/O78/added-to-team.html") == b"<p>{{ teamName }}</p>\n"


def test_a_change_of_line_endings_alone_is_said_not_shown_as_a_rewrite(samples, owner_client):
    original = published_bytes().decode()
    upload = SimpleUploadedFile("x.html", as_browser_sends(original).encode())
    edit_and_publish(owner_client, "", upload=upload)
    [new, old] = template_history(key=KEY)
    diff = version_diff(
        key=KEY,
        old=old.version_id,
        new=new.version_id,
        template_store=container.current().template_store,
    )
    assert diff.splitlines() == [
        f"@@ only the line endings differ: LF in {old.version_id}, CRLF (Windows) in "
        f"{new.version_id} @@"
    ]
    page = unescape(owner_client.get(f"{BASE}history/{KEY}/").content.decode())
    assert "only the line endings differ" in page


def test_templates_history_of_an_unknown_key_says_so_and_fails(samples):
    """`templates history default/nope.html` printed nothing and exited 0."""
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match=r"no template at default/nope\.html"):
        call_command("templates", "history", "default/nope.html")


def test_templates_history_of_a_file_never_published_here_says_so(samples, capsys):
    call_command("templates", "history", KEY)
    assert capsys.readouterr().out.strip() == (
        f"{KEY}: no version recorded (written outside the console)"
    )


def test_the_original_row_shows_when_the_file_was_uploaded(samples, owner_client):
    """The history's "original" row showed the publish's time, not the upload's."""
    store = container.current().template_store
    uploaded = store.client.head_object(Bucket=store.bucket, Key=KEY)["LastModified"]

    edit_and_publish(owner_client, published_bytes().decode().replace("</p>", " (x)</p>", 1))

    [new, original] = template_history(key=KEY)
    assert original.kind == "original" and original.at == uploaded
    assert new.at > original.at
