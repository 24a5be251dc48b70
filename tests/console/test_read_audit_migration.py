"""Moving the journal-read audit from the API app to the console keeps every existing row."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("api", "0002_read_audit_for_support_leads"), ("templates_admin", "0004_jobs")]
AFTER = [
    ("api", "0003_read_audit_moved_to_console"),
    ("templates_admin", "0005_journal_read_audit"),
]


@pytest.fixture(autouse=True)
def back_to_the_latest_schema():
    """Leave the database as every other test expects it: every migration applied."""
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def test_audit_rows_survive_the_move_with_their_ids_actor_and_token():
    old = _migrate(BEFORE)
    User = old.get_model("auth", "User")
    Token = old.get_model("api", "ApiToken")
    Audit = old.get_model("api", "JournalReadAudit")
    pat = User.objects.create(username="pat")
    token = Token.objects.create(name="billing", prefix="eo_abcd1234", token_hash="h" * 64)
    Audit.objects.create(
        id=41, channel="console", actor="pat", user=pat, action="search", query="a@example.com",
        filters={"status": "SENT"},
    )  # fmt: skip
    Audit.objects.create(
        id=42, channel="api", actor="token billing (eo_abcd1234…)", token=token, action="get",
        query="reset-42:a@example.com",
    )  # fmt: skip

    new = _migrate(AFTER)
    Moved = new.get_model("templates_admin", "JournalReadAudit")
    rows = {r.id: r for r in Moved.objects.all()}
    assert set(rows) == {41, 42}
    assert (rows[41].actor, rows[41].user_id, rows[41].filters) == (
        "pat",
        pat.id,
        {"status": "SENT"},
    )
    assert (rows[42].token_prefix, rows[42].query) == ("eo_abcd1234", "reset-42:a@example.com")
    assert "api_journalreadaudit" not in connection.introspection.table_names()
    # The sequence moved past the copied ids: a new read gets a fresh one.
    assert Moved.objects.create(channel="cli", actor="os:root", action="id", query="x").id > 42
    Group = new.get_model("auth", "Group")
    leads = Group.objects.get(name="Support leads")
    assert leads.permissions.filter(
        content_type__app_label="templates_admin", codename="view_journalreadaudit"
    ).exists()

    back = _migrate(BEFORE).get_model("api", "JournalReadAudit")  # and back again
    assert sorted(back.objects.values_list("id", "token_id")) == [
        (41, None),
        (42, token.id),
        (43, None),
    ]
