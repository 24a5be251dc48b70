"""Draft, publish, history and rollback services against moto: exact bytes at the Go-layout keys,
the original-bytes rule, conflicts (sequential and injected mid-publish), audited subject changes."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from emailops import container
from templates_admin.drafts import selectors, services
from templates_admin.models import MappingChange, TemplateDraft, TemplateVersion

pytestmark = pytest.mark.django_db

KEY = "default/added-to-team.html"
TEAM = "added-to-team"


def s3_objects(aws) -> dict[str, bytes]:
    store = container.current().template_store
    return {key: store.read_object(key).data for key in store.list_keys("")}


def published(key: str = KEY) -> bytes:
    return container.current().template_store.read_object(key).data


def edit(text: str) -> str:
    return text.replace("Welcome to", "Hello and welcome to")


def test_publish_writes_exactly_the_drafts_bytes_and_keeps_the_original(samples, owner):
    before = s3_objects(samples)
    original = before[KEY]
    source = edit(original.decode()) + "<!-- trailing \r\n bytes kept -->\r\n"
    draft = services.draft_create(
        key=KEY,
        source=source,
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )

    assert s3_objects(samples).keys() - before.keys() == {f"_emailops/drafts/{draft.pk}/{KEY}"}
    assert published() == original  # a draft never changes what is sent

    version = services.draft_publish(
        draft_id=draft.pk, user=owner, reason="friendlier", adapters=container.current()
    )

    assert published() == source.encode()
    changed = {k for k, v in s3_objects(samples).items() if before.get(k) != v}
    assert {k for k in changed if not k.startswith("_emailops/")} == {KEY}
    history = selectors.template_history(key=KEY)
    assert [(v.kind, v.author) for v in history] == [("publish", owner), ("original", None)]
    assert history[0] == version and version.reason == "friendlier"
    assert version.parent_version == history[1].version_id
    assert (
        selectors.version_source(
            key=KEY,
            version_id=history[1].version_id,
            template_store=container.current().template_store,
        )
        == original.decode()
    )
    assert selectors.published_source(
        key=KEY, template_store=container.current().template_store
    ) == (source, version.version_id)
    assert TemplateDraft.objects.get(pk=draft.pk).published_version == version.version_id
    assert "+  <h1" in selectors.version_diff(
        key=KEY,
        old=history[1].version_id,
        new=version.version_id,
        template_store=container.current().template_store,
    )


def test_rollback_publishes_the_old_bytes_as_a_new_version(samples, owner):
    original = published()
    draft = services.draft_create(
        key=KEY,
        source=edit(original.decode()),
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    services.draft_publish(draft_id=draft.pk, user=owner, reason="r1", adapters=container.current())
    oldest = selectors.template_history(key=KEY)[-1]

    back = services.template_rollback(
        key=KEY,
        version_id=oldest.version_id,
        user=owner,
        reason="undo",
        template_store=container.current().template_store,
    )

    assert published() == original
    assert back.kind == "rollback" and back.restored_from == oldest.version_id
    assert [v.kind for v in selectors.template_history(key=KEY)] == [
        "rollback",
        "publish",
        "original",
    ]


def test_the_second_of_two_drafts_from_one_version_conflicts(samples, owner, make_user):
    other = make_user("Template owners", username="other-owner")
    text = published().decode()
    first = services.draft_create(
        key=KEY,
        source=text + "<!-- a -->",
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    second = services.draft_create(
        key=KEY,
        source=text + "<!-- b -->",
        subject=None,
        message_id=TEAM,
        user=other,
        adapters=container.current(),
    )
    services.draft_publish(draft_id=first.pk, user=owner, reason="a", adapters=container.current())

    with pytest.raises(services.DraftConflict):
        services.draft_publish(
            draft_id=second.pk, user=other, reason="b", adapters=container.current()
        )

    assert published() == (text + "<!-- a -->").encode()
    assert TemplateVersion.objects.filter(key=KEY, kind="publish").count() == 1
    assert selectors.drafts_for_message(message_id=TEAM) == [second]


def test_a_write_to_the_key_between_check_and_publish_is_a_conflict(samples, owner, monkeypatch):
    """Someone uploads the file after our version check, before our write: S3's If-Match
    refuses our write and nothing is recorded."""
    store = container.current().template_store
    text = published().decode()
    draft = services.draft_create(
        key=KEY,
        source=text + "<!-- mine -->",
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    real_publish = store.publish_template

    def upload_first(key, data, **kwargs):
        store.write_template(KEY, "<p>uploaded by hand meanwhile</p>")
        return real_publish(key, data, **kwargs)

    monkeypatch.setattr(store, "publish_template", upload_first)

    with pytest.raises(services.DraftConflict):
        services.draft_publish(
            draft_id=draft.pk, user=owner, reason="mine", adapters=container.current()
        )

    assert published() == b"<p>uploaded by hand meanwhile</p>"
    assert not TemplateVersion.objects.filter(key=KEY).exists()


def test_a_concurrent_publish_committed_after_our_read_is_a_conflict(samples, owner, monkeypatch):
    """Another owner's publish commits its version between our read and our insert (same
    parent): the unique (key, parent_version) row makes ours fail, before any S3 write."""
    store = container.current().template_store
    text = published().decode()
    draft = services.draft_create(
        key=KEY,
        source=text + "<!-- mine -->",
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    baseline = services.draft_create(
        key=KEY,
        source=text + "<!-- base -->",
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    services.draft_publish(
        draft_id=baseline.pk, user=owner, reason="base", adapters=container.current()
    )
    draft.base_version = baseline.published_version = published_version = (
        TemplateVersion.objects.get(kind="publish").version_id
    )
    draft.save()
    real_read = store.read_object
    injected = []

    def read_then_other_commits(key):
        found = real_read(key)
        if key == KEY and not injected:
            injected.append(key)
            TemplateVersion.objects.create(
                key=KEY,
                version_id="theirs",
                parent_version=published_version,
                kind="publish",
                history_key="_emailops/history/x",
            )
        return found

    monkeypatch.setattr(store, "read_object", read_then_other_commits)

    with pytest.raises(services.DraftConflict):
        services.draft_publish(
            draft_id=draft.pk, user=owner, reason="mine", adapters=container.current()
        )

    assert injected
    assert published() == (text + "<!-- base -->").encode()


def test_a_subject_draft_goes_through_the_audited_mapping_service(samples, owner):
    draft = services.draft_create(
        key=KEY,
        source="",
        subject="Welcome aboard {{.teamName}}",
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )

    assert (
        services.draft_publish(
            draft_id=draft.pk, user=owner, reason="subject", adapters=container.current()
        )
        is None
    )

    assert (
        container.current().mapping_store.get_mapping(TEAM).subject
        == "Welcome aboard {{.teamName}}"
    )
    change = MappingChange.objects.get(message_id=TEAM)
    assert change.user == owner and change.after["subject"] == "Welcome aboard {{.teamName}}"
    assert not TemplateVersion.objects.exists()


def test_a_draft_with_a_render_error_is_not_published(samples, owner):
    original = published()
    draft = services.draft_create(
        key=KEY,
        source="{{ if .x }}never closed",
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )

    with pytest.raises(services.CheckFailed) as caught:
        services.draft_publish(
            draft_id=draft.pk, user=owner, reason="broken", adapters=container.current()
        )

    assert caught.value.findings[0].file == KEY
    assert published() == original


def test_a_new_branded_file_and_discarding(samples, owner):
    key = "custom/O42/added-to-team.html"
    draft = services.draft_create(
        key=key,
        source="<p>O42 {{.teamName}}</p>",
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    assert draft.base_version == "" and draft.organization == "42"
    version = services.draft_publish(
        draft_id=draft.pk, user=owner, reason="brand O42", adapters=container.current()
    )
    assert published(key) == b"<p>O42 {{.teamName}}</p>"
    assert [v.kind for v in selectors.template_history(key=key)] == ["publish"]
    assert version.parent_version == ""

    other = services.draft_create(
        key=key,
        source=None,
        subject=None,
        message_id=TEAM,
        user=owner,
        adapters=container.current(),
    )
    assert other.source == "<p>O42 {{.teamName}}</p>"
    services.draft_discard(
        draft_id=other.pk, user=owner, template_store=container.current().template_store
    )
    assert selectors.drafts_for_message(message_id=TEAM) == []
    with pytest.raises(ValidationError):
        services.draft_publish(
            draft_id=other.pk, user=owner, reason="x", adapters=container.current()
        )


@pytest.mark.parametrize("key", ["_emailops/x.html", "default/../x", "custom/Oabc/x.html", "x"])
def test_only_go_layout_keys_take_drafts(samples, owner, key):
    with pytest.raises(ValidationError):
        services.draft_create(
            key=key,
            source="<p>x</p>",
            subject=None,
            message_id="",
            user=owner,
            adapters=container.current(),
        )
