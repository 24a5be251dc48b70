"""The template lifecycle as code, as a subprocess against moto server: pull, edit, draft, check,
publish, history, rollback, with a real consumer sending before and after each step. The email
sent is always the render of exactly the bytes at the Go-layout key; a draft changes nothing."""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest

from emailops.core.rendering import Renderer
from tests.support.stack import MANAGE

KEY = "default/added-to-team.html"
CONTEXT = {"teamName": "Imaging", "host": "app.pennsieve.test", "organizationNodeId": "N:org:1"}


@pytest.fixture(scope="module")
def cli(e2e_stack, tmp_path_factory):
    """``manage.py templates ...`` on the stack, with its own SQLite database (migrated)."""
    db = tmp_path_factory.mktemp("templates-db") / "db.sqlite3"
    env = e2e_stack.console_database(db)

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [*MANAGE, "templates", *args],
            env={**e2e_stack.env, **env},
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"templates {args} exited {result.returncode}:\n{result.stderr}")
        return result

    return run


def published(stack) -> bytes:
    s3 = stack.client("s3")
    return s3.get_object(Bucket=stack.env["S3_BUCKET"], Key=KEY)["Body"].read()


def send_and_read(stack) -> tuple[str, dict]:
    """One request through a real consume_emails run; (the sent HTML body, its journal row)."""
    address = f"team-{uuid.uuid4().hex[:8]}@example.com"
    stack.enqueue(
        [
            {
                "messageId": "added-to-team",
                "recipients": [{"name": "T", "email": address}],
                "context": CONTEXT,
            }
        ]
    )
    stack.consume()
    (message,) = stack.sent_to(address)
    (key,) = [k for k in stack.journal_statuses() if stack.row(k).get("Recipient") == address]
    return message.body, stack.row(key)


def assert_sends(stack, source: bytes) -> dict:
    body, row = send_and_read(stack)
    assert body == Renderer().render_body(source.decode(), CONTEXT, name=KEY).text
    return row


def test_pull_draft_check_publish_history_rollback(e2e_stack, cli, tmp_path):
    original = published(e2e_stack)
    row = assert_sends(e2e_stack, original)
    assert row["TemplateVersion"]  # an unversioned file predating the console: its ETag

    # pull: the bucket's layout, exact bytes, and mappings.json
    pulled = tmp_path / "templates"
    cli("pull", str(pulled))
    assert (pulled / KEY).read_bytes() == original
    assert (pulled / "custom/O367/dataset-publication-accepted.html").is_file()
    mappings = json.loads((pulled / "mappings.json").read_text())
    assert {"MessageId": "added-to-team", "TemplateFile": "added-to-team.html"}.items() <= next(
        m for m in mappings if m["MessageId"] == "added-to-team"
    ).items()

    # edit + draft: the id on the last line; nothing sent changes
    # (a file from disk keeps its bytes, CRLF too; the draft reads a variable no send has)
    edited = original.replace(b"Open your teams", b"See your teams{{ .nickname }}").replace(
        b"\n", b"\r\n"
    )
    (pulled / KEY).write_bytes(edited)
    draft_out = cli("draft", KEY, str(pulled / KEY), "--message-id", "added-to-team").stdout
    draft_id = draft_out.strip().splitlines()[-1]
    assert draft_id.isdigit()
    assert published(e2e_stack) == original
    assert_sends(e2e_stack, original)

    # check: clean draft passes; a broken one exits 1 and is never published
    checked = json.loads(cli("check", draft_id, "--json").stdout)
    assert [f for f in checked if f["severity"] == "error"] == []
    (tmp_path / "broken.html").write_text("{{ if .teamName }}never closed")
    broken_id = cli("draft", KEY, str(tmp_path / "broken.html")).stdout.split()[-1]
    assert cli("check", broken_id, check=False).returncode == 1
    assert cli("publish", broken_id, check=False).returncode != 0
    assert published(e2e_stack) == original
    assert_sends(e2e_stack, original)

    # publish: with a warning the draft introduces (recent sends lack `nickname`) only once
    # confirmed; then the key
    # holds exactly the draft's bytes and the consumer sends them
    assert [f["message"].split()[0] for f in checked if not f.get("inherited", True)] == [
        "nickname"
    ]
    unconfirmed = cli("publish", draft_id, "--reason", "wording", check=False)
    assert unconfirmed.returncode != 0 and "--accept-warnings" in unconfirmed.stderr
    assert published(e2e_stack) == original
    published_out = cli("publish", draft_id, "--reason", "wording", "--accept-warnings").stdout
    new_version = published_out.strip().splitlines()[-1]
    assert published(e2e_stack) == edited
    row = assert_sends(e2e_stack, edited)
    assert row["TemplateVersion"] == new_version

    # history: newest first, the version id first on each line
    lines = cli("history", KEY).stdout.strip().splitlines()
    assert next(line.split()[0] for line in lines) == new_version
    assert [line.split()[3] for line in lines] == ["publish", "original"]
    original_version = lines[1].split()[0]
    history = json.loads(cli("history", KEY, "--json").stdout)
    assert [v["version_id"] for v in history] == [new_version, original_version]

    # rollback: exactly the old bytes again, as a new version
    back = json.loads(cli("rollback", KEY, original_version, "--reason", "undo", "--json").stdout)
    assert back["kind"] == "rollback" and back["restored_from"] == original_version
    assert published(e2e_stack) == original
    row = assert_sends(e2e_stack, original)
    assert row["TemplateVersion"] == back["version_id"]
    assert cli("history", KEY).stdout.split()[0] == back["version_id"]

    # the draft that was published is not published twice; a stale draft conflicts
    assert cli("publish", draft_id, "--accept-warnings", check=False).returncode != 0
    stale = cli("draft", KEY, str(pulled / KEY)).stdout.split()[-1]
    cli("rollback", KEY, new_version)
    conflict = cli("publish", stale, "--accept-warnings", check=False)
    assert conflict.returncode != 0 and "publish template" in conflict.stderr
    assert published(e2e_stack) == edited
