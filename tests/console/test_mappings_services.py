"""Mapping services against moto: DynamoDB writes, the audit trail, conflicts, test sends."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError

from emailops import container
from emailops.core.contract import parse_request
from emailops.core.dedupe import dedupe_key
from emailops.core.errors import ConcurrentUpdate, TransientError
from templates_admin.mappings import services
from templates_admin.models import EmailAction, MappingChange

pytestmark = pytest.mark.django_db

ACCEPTED = "dataset-publication-accepted"


def stored(message_id: str):
    return container.current().mapping_store.get_mapping(message_id)


# --- create ------------------------------------------------------------------------------------


def test_create_writes_the_row_and_audits_it(samples, owner):
    saved = services.mapping_create(
        message_id="team-welcome",
        template_file="added-to-team.html",
        subject="Welcome to {{.teamName}}",
        user=owner,
        adapters=container.current(),
    )

    row = stored("team-welcome")
    assert row == saved
    assert (row.template_file, row.subject, row.version) == (
        "added-to-team.html",
        "Welcome to {{.teamName}}",
        1,
    )
    assert row.updated_by == owner.username and row.updated_at
    change = MappingChange.objects.get(message_id="team-welcome")
    assert change.action == MappingChange.Action.CREATE and change.user == owner
    assert change.before is None
    assert change.after["subject"] == "Welcome to {{.teamName}}" and change.after["version"] == 1


@pytest.mark.parametrize(
    ("fields", "bad_field"),
    [
        ({"message_id": "not a slug!"}, "message_id"),
        ({"template_file": "no-such-file.html"}, "template_file"),
        ({"template_file": "../default/added-to-team.html"}, "template_file"),
        ({"template_file": "O367/added-to-team.html"}, "template_file"),
        ({"subject": "Hello {{if .name}}"}, "subject"),
        ({"subject": "Hello {% if name %}"}, "subject"),
        ({"subject": "Hello {{.name"}, "subject"),
        ({"subject": "two\nlines"}, "subject"),
        ({"subject": "   "}, "subject"),
    ],
)
def test_create_refuses_what_the_consumer_could_not_use(samples, owner, fields, bad_field):
    values = {
        "message_id": "team-welcome",
        "template_file": "added-to-team.html",
        "subject": "Welcome",
    } | fields

    with pytest.raises(ValidationError) as caught:
        services.mapping_create(**values, user=owner, adapters=container.current())

    assert set(caught.value.message_dict) == {bad_field}
    assert stored(values["message_id"]) is None
    assert not MappingChange.objects.exists()


def test_create_accepts_jinja_subjects(samples, owner):
    services.mapping_create(
        message_id="jinja-subject",
        template_file="added-to-team.html",
        subject="{% if teamName %}Welcome to {{ teamName }}{% endif %}",
        user=owner,
        adapters=container.current(),
    )
    assert stored("jinja-subject").version == 1


def test_create_of_an_existing_id_conflicts_and_carries_the_current_row(samples, owner):
    with pytest.raises(ConcurrentUpdate) as caught:
        services.mapping_create(
            message_id=ACCEPTED,
            template_file="added-to-team.html",
            subject="x",
            user=owner,
            adapters=container.current(),
        )

    assert caught.value.current.template_file == "dataset-publication-accepted.html"
    assert stored(ACCEPTED).template_file == "dataset-publication-accepted.html"
    assert not MappingChange.objects.exists()


# --- update ------------------------------------------------------------------------------------


def test_update_bumps_the_version_and_audits_before_and_after(samples, owner):
    before = stored(ACCEPTED)

    saved = services.mapping_update(
        message_id=ACCEPTED,
        template_file=before.template_file,
        subject="Accepted: {{.datasetName}}",
        expected_version=before.version,
        user=owner,
        adapters=container.current(),
    )

    assert saved.version == before.version + 1
    assert stored(ACCEPTED).subject == "Accepted: {{.datasetName}}"
    change = MappingChange.objects.get()
    assert change.action == MappingChange.Action.UPDATE
    assert change.before["subject"] == before.subject
    assert change.after["subject"] == "Accepted: {{.datasetName}}"


def test_second_editor_with_a_stale_version_gets_a_conflict_not_an_overwrite(
    samples, owner, make_user
):
    other = make_user("Template owners", username="other-owner")
    opened = stored(ACCEPTED)  # both opened the page at this version
    services.mapping_update(
        message_id=ACCEPTED,
        template_file=opened.template_file,
        subject="First editor's subject",
        expected_version=opened.version,
        user=other,
        adapters=container.current(),
    )

    with pytest.raises(ConcurrentUpdate) as caught:
        services.mapping_update(
            message_id=ACCEPTED,
            template_file=opened.template_file,
            subject="Second editor's subject",
            expected_version=opened.version,
            user=owner,
            adapters=container.current(),
        )

    assert "changed since you opened it" in caught.value.reason
    assert caught.value.current.subject == "First editor's subject"
    assert caught.value.current.updated_by == "other-owner"
    assert stored(ACCEPTED).subject == "First editor's subject"
    assert MappingChange.objects.count() == 1  # the refused save left no trail entry


def test_update_that_changes_nothing_writes_nothing(samples, owner):
    current = stored(ACCEPTED)

    result = services.mapping_update(
        message_id=ACCEPTED,
        template_file=current.template_file,
        subject=current.subject,
        expected_version=current.version,
        user=owner,
        adapters=container.current(),
    )

    assert result == current == stored(ACCEPTED)
    assert not MappingChange.objects.exists()


def test_update_of_a_deleted_mapping_conflicts(samples, owner):
    current = stored(ACCEPTED)
    container.current().mapping_store.delete_mapping(ACCEPTED, expected_version=current.version)

    with pytest.raises(ConcurrentUpdate) as caught:
        services.mapping_update(
            message_id=ACCEPTED,
            template_file=current.template_file,
            subject="x",
            expected_version=current.version,
            user=owner,
            adapters=container.current(),
        )

    assert caught.value.current is None and "deleted" in caught.value.reason
    assert stored(ACCEPTED) is None


def test_a_failed_dynamodb_write_leaves_no_audit_entry(samples, owner, monkeypatch):
    def unavailable(*args, **kwargs):
        raise TransientError("save template mapping", reason="ThrottlingException")

    monkeypatch.setattr(container.current().mapping_store, "save_mapping", unavailable)
    current = stored(ACCEPTED)

    with pytest.raises(TransientError):
        services.mapping_update(
            message_id=ACCEPTED,
            template_file=current.template_file,
            subject="never stored",
            expected_version=current.version,
            user=owner,
            adapters=container.current(),
        )

    assert not MappingChange.objects.exists()


# --- delete ------------------------------------------------------------------------------------


def test_delete_removes_the_row_and_audits_what_it_was(samples, owner):
    current = stored(ACCEPTED)

    deleted = services.mapping_delete(
        message_id=ACCEPTED,
        expected_version=current.version,
        user=owner,
        mapping_store=container.current().mapping_store,
    )

    assert deleted == current  # the page's "deleted" step tells it from a form with errors
    assert stored(ACCEPTED) is None
    change = MappingChange.objects.get()
    assert change.action == MappingChange.Action.DELETE
    assert change.before["template_file"] == current.template_file and change.after is None


def test_delete_with_a_stale_version_conflicts_and_keeps_the_row(samples, owner):
    opened = stored(ACCEPTED)
    services.mapping_update(
        message_id=ACCEPTED,
        template_file=opened.template_file,
        subject="changed meanwhile",
        expected_version=opened.version,
        user=owner,
        adapters=container.current(),
    )

    with pytest.raises(ConcurrentUpdate):
        services.mapping_delete(
            message_id=ACCEPTED,
            expected_version=opened.version,
            user=owner,
            mapping_store=container.current().mapping_store,
        )

    assert stored(ACCEPTED).subject == "changed meanwhile"
    assert list(MappingChange.objects.values_list("action", flat=True)) == ["update"]


# --- send test ---------------------------------------------------------------------------------


def test_send_test_queues_a_contract_request_to_the_user_only(samples, owner):
    context = {"datasetName": "Rat brain atlas", "organizationId": 367}

    action = services.send_test_email(
        message_id=ACCEPTED, context=context, user=owner, queue=container.current().queue
    )

    [message] = samples.queue_messages(samples.queue_url)
    request = parse_request(message["Body"])
    assert request.message_id == ACCEPTED
    assert [r.email for r in request.recipients] == [owner.email]
    assert request.context == context
    assert request.dedupe_id.startswith("test-") and request.dedupe_id == action.dedupe_id
    assert action.kind == EmailAction.Kind.SEND_TEST and action.user == owner
    assert action.recipient == owner.email and action.message_id == ACCEPTED
    assert action.journal_key == dedupe_key(request, owner.email)
    assert action.sqs_message_id == message["MessageId"]
    assert EmailAction.objects.get() == action


def test_each_test_send_gets_a_fresh_dedupe_id(samples, owner):
    first = services.send_test_email(
        message_id=ACCEPTED, context={}, user=owner, queue=container.current().queue
    )
    second = services.send_test_email(
        message_id=ACCEPTED, context={}, user=owner, queue=container.current().queue
    )

    assert first.dedupe_id != second.dedupe_id
    assert first.journal_key != second.journal_key


def test_the_consumer_delivers_a_test_send_under_its_journal_key(samples, owner):
    from emailops.container import current

    action = services.send_test_email(
        message_id=ACCEPTED,
        context={"datasetName": "Atlas"},
        user=owner,
        queue=container.current().queue,
    )
    [message] = samples.queue_messages(samples.queue_url)

    current().build_pipeline(lease_seconds=30).process(message["Body"])

    row = container.current().journal.get(action.journal_key)
    assert row["Status"] == "SENT" and row["Recipient"] == owner.email
    [sent] = samples.sent_emails()
    assert sent.destinations["ToAddresses"] == [owner.email]


def test_send_test_refuses_a_user_without_an_email(samples, make_user):
    user = make_user("Template owners", username="no-mail")
    user.email = ""
    user.save()

    with pytest.raises(ValidationError, match="no email address"):
        services.send_test_email(
            message_id=ACCEPTED, context={}, user=user, queue=container.current().queue
        )

    assert samples.queue_messages(samples.queue_url) == []
    assert not EmailAction.objects.exists()


def test_send_test_refuses_what_the_consumer_would_refuse(samples, owner):
    with pytest.raises(ValidationError, match="organizationId"):
        services.send_test_email(
            message_id=ACCEPTED,
            context={"organizationId": "O367"},
            user=owner,
            queue=container.current().queue,
        )

    assert samples.queue_messages(samples.queue_url) == []
    assert not EmailAction.objects.exists()


def test_a_failed_enqueue_leaves_no_audit_entry(samples, owner, monkeypatch):
    def unavailable(body):
        raise TransientError("enqueue request", reason="ServiceUnavailable")

    monkeypatch.setattr(container.current().queue, "send", unavailable)

    with pytest.raises(TransientError):
        services.send_test_email(
            message_id=ACCEPTED, context={}, user=owner, queue=container.current().queue
        )

    assert not EmailAction.objects.exists()


def test_send_test_body_is_the_wire_format(samples, owner):
    services.send_test_email(
        message_id=ACCEPTED, context={"a": 1}, user=owner, queue=container.current().queue
    )

    [message] = samples.queue_messages(samples.queue_url)
    body = json.loads(message["Body"])
    assert set(body) == {"messageId", "recipients", "context", "dedupeId"}


def test_sending_off_is_audited_and_kept_by_later_edits(samples, owner):
    before = stored(ACCEPTED)
    off = services.mapping_update(
        message_id=ACCEPTED,
        template_file=before.template_file,
        subject=before.subject,
        send_disabled=True,
        expected_version=before.version,
        user=owner,
        adapters=container.current(),
    )
    change = MappingChange.objects.get()
    assert (change.before["send_disabled"], change.after["send_disabled"]) == (False, True)

    services.mapping_update(  # an edit that doesn't say keeps sending off
        message_id=ACCEPTED,
        template_file=before.template_file,
        subject="Accepted: {{.datasetName}}",
        expected_version=off.version,
        user=owner,
        adapters=container.current(),
    )
    assert stored(ACCEPTED).send_disabled is True
