"""Publishing as steps (docs/templates.md, "Publishing"): a failure after each step leaves a state
the next attempt repairs, and a mapping conflict stops the publish before the file goes out.

Faults are injected at the seams the services call through: the S3 store's ``publish_template``,
the DynamoDB mapping store's ``save_mapping`` and the database connection (an execute wrapper).
"""

from __future__ import annotations

import contextlib
from html import unescape

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from emailops import container
from emailops.core.errors import ConcurrentUpdate, TransientError
from templates_admin.drafts import selectors, services
from templates_admin.mappings import services as mapping_services
from templates_admin.models import TemplateDraft, TemplateVersion

pytestmark = pytest.mark.django_db

KEY = "default/added-to-team.html"
TEAM = "added-to-team"
SUBJECT = "Welcome aboard {{.teamName}}"


class Outage(TransientError):
    """What an adapter raises when its store is unreachable (the fault we inject)."""

    def __init__(self, where: str) -> None:
        super().__init__("injected fault", key=where, reason="unreachable")


def published() -> bytes:
    return container.current().template_store.read_object(KEY).data


def new_source() -> str:
    return published().decode().replace("Welcome to", "Hello and welcome to")


def fail_after(monkeypatch, target, name: str, *, before: bool = False) -> None:
    """``target.name`` fails once: after doing its work (a lost answer), or ``before`` it."""
    real = getattr(target, name)
    calls = []

    def failing(*args, **kwargs):
        if calls:
            return real(*args, **kwargs)
        calls.append(name)
        if before:
            raise Outage(name)
        real(*args, **kwargs)
        raise Outage(name)

    monkeypatch.setattr(target, name, failing)


def someone_saves_the_mapping_first(monkeypatch) -> None:
    """The mapping's conditional write refuses once, as when another owner saved it meanwhile."""
    store = container.current().mapping_store
    real_save = store.save_mapping
    raced = []

    def refused_once(mapping, *, expected_version):
        if not raced:
            raced.append(expected_version)
            raise ConcurrentUpdate("save template mapping", key=TEAM, reason="changed meanwhile")
        return real_save(mapping, expected_version=expected_version)

    monkeypatch.setattr(store, "save_mapping", refused_once)


@contextlib.contextmanager
def database_fails_on(fragment: str):
    """The database refuses the first statement containing ``fragment``."""
    seen = []

    def wrapper(execute, sql, params, many, context):
        if fragment in sql and not seen:
            seen.append(sql)
            raise Outage("database")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield seen
    assert seen, f"no statement contained {fragment!r}"


def assert_published(draft: TemplateDraft, source: str, *, subject: str = SUBJECT) -> None:
    """The one correct final state, however many attempts it took."""
    live = container.current().template_store.read_object(KEY)
    assert live.data == source.encode()
    history = selectors.template_history(key=KEY)
    assert [v.kind for v in history] == ["publish", "original"]  # no bogus "original"
    assert history[0].draft_id == draft.pk and history[0].version_id == live.version
    assert history[0].parent_version == history[1].version_id
    assert (
        selectors.version_source(
            key=KEY, version_id=live.version, template_store=container.current().template_store
        )
        == source
    )
    assert not TemplateVersion.objects.filter(state=TemplateVersion.State.PENDING).exists()
    assert container.current().mapping_store.get_mapping(TEAM).subject == subject
    draft.refresh_from_db()
    assert not draft.is_open and draft.published_version == live.version


def a_draft(owner, *, subject: str | None = SUBJECT) -> tuple[TemplateDraft, str]:
    source = new_source()
    draft = services.draft_create(
        key=KEY,
        source=source,
        subject=subject,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    return draft, source


def test_a_failure_after_the_version_row_is_finished_by_the_next_attempt(
    samples, owner, monkeypatch
):
    draft, source = a_draft(owner)
    original = published()
    fail_after(monkeypatch, container.current().template_store, "publish_template", before=True)

    with pytest.raises(Outage):
        services.draft_publish(
            draft_id=draft.pk, user=owner, reason="r", adapters=container.current()
        )

    assert published() == original
    assert TemplateVersion.objects.get(draft=draft).state == "pending"
    assert container.current().mapping_store.get_mapping(TEAM).subject != SUBJECT
    services.draft_publish(draft_id=draft.pk, user=owner, reason="r", adapters=container.current())
    assert_published(draft, source)


def test_a_failure_after_the_s3_write_is_not_recorded_as_an_original(samples, owner, monkeypatch):
    """The issue's case: the file is out, the database step after it failed. Before, the next
    publish recorded our own file as an "original" the console never published."""
    draft, source = a_draft(owner)
    fail_after(monkeypatch, container.current().template_store, "publish_template")

    with pytest.raises(Outage):
        services.draft_publish(
            draft_id=draft.pk, user=owner, reason="r", adapters=container.current()
        )

    assert published() == source.encode()
    assert TemplateDraft.objects.get(pk=draft.pk).is_open
    services.draft_publish(draft_id=draft.pk, user=owner, reason="r", adapters=container.current())
    assert_published(draft, source)


def test_a_failure_after_the_mapping_update_is_finished_by_the_next_attempt(
    samples, owner, monkeypatch
):
    draft, source = a_draft(owner)
    fail_after(monkeypatch, container.current().mapping_store, "save_mapping")

    with pytest.raises(Outage):
        services.draft_publish(
            draft_id=draft.pk, user=owner, reason="r", adapters=container.current()
        )

    assert container.current().mapping_store.get_mapping(TEAM).subject == SUBJECT
    services.draft_publish(draft_id=draft.pk, user=owner, reason="r", adapters=container.current())
    assert_published(draft, source)


def test_a_failure_closing_the_draft_is_finished_by_the_next_attempt(samples, owner):
    draft, source = a_draft(owner)

    with database_fails_on('UPDATE "templates_admin_templatedraft"'), pytest.raises(Outage):
        services.draft_publish(
            draft_id=draft.pk, user=owner, reason="r", adapters=container.current()
        )

    assert published() == source.encode()
    assert TemplateDraft.objects.get(pk=draft.pk).is_open
    assert TemplateVersion.objects.get(draft=draft).state == "pending"  # rolled back with it
    services.draft_publish(draft_id=draft.pk, user=owner, reason="r", adapters=container.current())
    assert_published(draft, source)


def test_a_failure_recording_the_version_row_leaves_nothing_behind(samples, owner):
    draft, source = a_draft(owner)
    original = published()

    with database_fails_on('INSERT INTO "templates_admin_templateversion"'), pytest.raises(Outage):
        services.draft_publish(
            draft_id=draft.pk, user=owner, reason="r", adapters=container.current()
        )

    assert published() == original
    assert not TemplateVersion.objects.exists()
    services.draft_publish(draft_id=draft.pk, user=owner, reason="r", adapters=container.current())
    assert_published(draft, source)


def test_another_publish_after_a_stopped_one_records_it_as_published(samples, owner, monkeypatch):
    """Someone else publishes the key while a stopped attempt's file is live: the history calls
    that file a publish of its draft, and the stopped draft's retry still finishes."""
    draft, source = a_draft(owner, subject=None)
    other = services.draft_create(
        key=KEY,
        source=source + "<!-- other -->",
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    fail_after(monkeypatch, container.current().template_store, "publish_template")
    with pytest.raises(Outage):
        services.draft_publish(
            draft_id=draft.pk, user=owner, reason="r", adapters=container.current()
        )

    with pytest.raises(services.DraftConflict):  # it started from the version before ours
        services.draft_publish(
            draft_id=other.pk, user=owner, reason="other", adapters=container.current()
        )

    kinds = [(v.kind, v.draft_id) for v in selectors.template_history(key=KEY)]
    assert kinds == [("publish", draft.pk), ("original", None)]
    services.draft_publish(draft_id=draft.pk, user=owner, reason="r", adapters=container.current())
    assert_published(
        draft, source, subject=container.current().mapping_store.get_mapping(TEAM).subject
    )


def test_a_mapping_changed_since_the_draft_stops_the_publish_before_the_file(samples, owner):
    draft, _ = a_draft(owner)
    original = published()
    mapping = container.current().mapping_store.get_mapping(TEAM)
    mapping_services.mapping_update(
        message_id=TEAM,
        template_file=mapping.template_file,
        subject="Theirs {{.teamName}}",
        expected_version=mapping.version,
        user=owner,
        adapters=container.current(),
    )

    with pytest.raises(services.DraftConflict) as caught:
        services.draft_publish(
            draft_id=draft.pk, user=owner, reason="r", adapters=container.current()
        )

    assert "changed since the draft" in caught.value.reason
    assert published() == original
    assert not TemplateVersion.objects.exists()
    assert container.current().mapping_store.get_mapping(TEAM).subject == "Theirs {{.teamName}}"
    assert TemplateDraft.objects.get(pk=draft.pk).is_open


def test_a_subject_the_mapping_refuses_stops_the_publish_before_the_file(samples, owner):
    """The mapping service would refuse the subject change (its default file was deleted by
    hand): that is found before the branded file goes out, not after."""
    key = "custom/O42/added-to-team.html"
    draft = services.draft_create(
        key=key,
        source="<p>O42 {{.teamName}}</p>",
        subject=SUBJECT,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    store = container.current().template_store
    store.client.delete_object(Bucket=store.bucket, Key=KEY)

    with pytest.raises(ValidationError, match="upload the default template"):
        services.draft_publish(
            draft_id=draft.pk,
            user=owner,
            reason="r",
            accept_warnings=True,
            adapters=container.current(),
        )

    assert store.read_object(key) is None
    assert not TemplateVersion.objects.exists()
    assert TemplateDraft.objects.get(pk=draft.pk).is_open


def test_a_mapping_saved_by_someone_else_mid_publish_is_finished_on_retry(
    samples, owner, monkeypatch
):
    """The race the preflight cannot see: the conditional write refuses, the file is already
    out, and the next attempt applies the subject to the fresh mapping and closes the draft."""
    draft, source = a_draft(owner)
    someone_saves_the_mapping_first(monkeypatch)

    with pytest.raises(services.DraftConflict) as caught:
        services.draft_publish(
            draft_id=draft.pk, user=owner, reason="r", adapters=container.current()
        )

    assert "publish again to finish" in caught.value.reason
    services.draft_publish(draft_id=draft.pk, user=owner, reason="r", adapters=container.current())
    assert_published(draft, source)


@pytest.mark.parametrize("before", [True, False], ids=["before-s3", "after-s3"])
def test_discarding_a_stopped_draft_keeps_the_history_true(samples, owner, monkeypatch, before):
    """Stopped before its file went out: discarding frees the key for the next draft. Stopped
    after: the live file stays recorded as that draft's publish, never as an "original"."""
    original = published()
    draft, source = a_draft(owner)
    fail_after(monkeypatch, container.current().template_store, "publish_template", before=before)
    with pytest.raises(Outage):
        services.draft_publish(
            draft_id=draft.pk, user=owner, reason="r", adapters=container.current()
        )

    services.draft_discard(
        draft_id=draft.pk, user=owner, template_store=container.current().template_store
    )

    assert published() == (original if before else source.encode())
    assert not TemplateVersion.objects.filter(state="pending").exists()
    kinds = [(v.kind, v.draft_id) for v in selectors.template_history(key=KEY)]
    assert kinds == (
        [("original", None)] if before else [("publish", draft.pk), ("original", None)]
    )
    base = container.current().template_store.read_object(KEY).version
    nxt = services.draft_create(
        key=KEY,
        source="<p>next {{.teamName}}</p>",
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    assert nxt.base_version == base
    services.draft_publish(
        draft_id=nxt.pk,
        user=owner,
        reason="next",
        accept_warnings=True,
        adapters=container.current(),
    )
    assert published() == b"<p>next {{.teamName}}</p>"
    assert [v.kind for v in selectors.template_history(key=KEY)].count("original") == 1


def test_a_stopped_draft_holds_the_key_with_a_clear_conflict(samples, owner, monkeypatch):
    draft, _ = a_draft(owner, subject=None)
    other = services.draft_create(
        key=KEY,
        source="<p>other</p>",
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    fail_after(monkeypatch, container.current().template_store, "publish_template", before=True)
    with pytest.raises(Outage):
        services.draft_publish(
            draft_id=draft.pk, user=owner, reason="r", adapters=container.current()
        )

    with pytest.raises(services.DraftConflict, match=f"draft #{draft.pk}'s publish"):
        services.draft_publish(
            draft_id=other.pk, user=owner, reason="other", adapters=container.current()
        )


@pytest.mark.parametrize("before", [True, False], ids=["before-s3", "after-s3"])
def test_a_rollback_that_stopped_is_finished_by_clicking_again(samples, owner, monkeypatch, before):
    original = published()
    draft, _ = a_draft(owner, subject=None)
    services.draft_publish(draft_id=draft.pk, user=owner, reason="r1", adapters=container.current())
    oldest = selectors.template_history(key=KEY)[-1]
    fail_after(monkeypatch, container.current().template_store, "publish_template", before=before)

    with pytest.raises(Outage):
        services.template_rollback(
            key=KEY,
            version_id=oldest.version_id,
            user=owner,
            reason="u",
            template_store=container.current().template_store,
        )
    back = services.template_rollback(
        key=KEY,
        version_id=oldest.version_id,
        user=owner,
        reason="u",
        template_store=container.current().template_store,
    )

    live = container.current().template_store.read_object(KEY)
    assert live.data == original and back.version_id == live.version
    history = selectors.template_history(key=KEY)
    assert [v.kind for v in history] == ["rollback", "publish", "original"]
    assert history[0].restored_from == oldest.version_id
    assert not TemplateVersion.objects.filter(state="pending").exists()


def test_the_publish_page_says_publish_again_when_only_the_subject_is_left(
    samples, owner, client, monkeypatch
):
    draft, source = a_draft(owner)
    someone_saves_the_mapping_first(monkeypatch)
    client.force_login(owner)
    url = f"/admin/templates_admin/templatemappingpage/draft/{draft.pk}/publish/"

    first = client.post(url, {"reason": "r", "accept_warnings": "on"}, follow=True)
    assert "Not finished" in unescape(first.content.decode())
    assert "publish again to finish" in unescape(first.content.decode())
    client.post(url, {"reason": "r", "accept_warnings": "on"})

    assert_published(draft, source)
